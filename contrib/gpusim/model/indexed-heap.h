/*
 * Sift operations of a d-ary min-heap whose entries know their own position: `place(pos, e)`
 * stores e at pos and records pos wherever the owner tracks it, so entries can later be
 * updated or removed in place. Used by FlowBackend for link fair shares and drain times.
 */
#ifndef GPUSIM_INDEXED_HEAP_H
#define GPUSIM_INDEXED_HEAP_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ns3
{
namespace gpusim
{

template <uint32_t Arity, typename Entry, typename Less, typename Place>
inline void
HeapSiftUp(const std::vector<Entry>& heap, uint32_t pos, Entry e, Less less, Place place)
{
    while (pos > 0)
    {
        const uint32_t parent = (pos - 1) / Arity;
        if (!less(e, heap[parent]))
        {
            break;
        }
        place(pos, heap[parent]);
        pos = parent;
    }
    place(pos, e);
}

template <uint32_t Arity, typename Entry, typename Less, typename Place>
inline void
HeapSiftDown(const std::vector<Entry>& heap, uint32_t pos, Entry e, Less less, Place place)
{
    const auto n = static_cast<uint32_t>(heap.size());
    for (;;)
    {
        const uint32_t first = pos * Arity + 1;
        if (first >= n)
        {
            break;
        }
        const uint32_t last = std::min(first + Arity, n);
        uint32_t best = first;
        for (uint32_t c = first + 1; c < last; ++c)
        {
            if (less(heap[c], heap[best]))
            {
                best = c;
            }
        }
        if (!less(heap[best], e))
        {
            break;
        }
        place(pos, heap[best]);
        pos = best;
    }
    place(pos, e);
}

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_INDEXED_HEAP_H

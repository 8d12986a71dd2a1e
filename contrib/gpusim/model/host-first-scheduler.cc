#include "ns3/host-first-scheduler.h"

#include "ns3/event-impl.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(HostFirstScheduler);

namespace
{
/// Host steps tagged but not inserted yet (one simulator per process, one thread).
std::unordered_map<const EventImpl*, uint64_t>&
PendingTags()
{
    static std::unordered_map<const EventImpl*, uint64_t> tags;
    return tags;
}

HostFirstScheduler::Gate&
TheGate()
{
    static HostFirstScheduler::Gate gate;
    return gate;
}
} // namespace

TypeId
HostFirstScheduler::GetTypeId()
{
    static TypeId tid = TypeId("ns3::HostFirstScheduler")
                            .SetParent<Scheduler>()
                            .SetGroupName("Gpusim")
                            .AddConstructor<HostFirstScheduler>();
    return tid;
}

HostFirstScheduler::HostFirstScheduler()
{
    s_current = this;
}

HostFirstScheduler::~HostFirstScheduler()
{
    if (s_current == this)
    {
        s_current = nullptr;
    }
}

void
HostFirstScheduler::TagHostEvent(const EventImpl* ev, uint64_t key)
{
    PendingTags()[ev] = key;
}

void
HostFirstScheduler::SetGate(Gate gate)
{
    TheGate() = std::move(gate);
}

HostFirstScheduler::Entry
HostFirstScheduler::MakeEntry(const Event& ev, bool consumeTag)
{
    Entry e{ev.key.m_ts, 1, ev.key.m_uid, ev.key.m_uid, ev.key.m_context, ev.impl};
    if (consumeTag)
    {
        auto& tags = PendingTags();
        auto it = tags.find(ev.impl);
        if (it != tags.end())
        {
            e.cls = 0;
            e.key = it->second;
            m_hostKeys[ev.key.m_uid] = it->second;
            tags.erase(it);
        }
    }
    else
    {
        auto it = m_hostKeys.find(ev.key.m_uid);
        if (it != m_hostKeys.end())
        {
            e.cls = 0;
            e.key = it->second;
        }
    }
    return e;
}

void
HostFirstScheduler::Insert(const Event& ev)
{
    const Entry e = MakeEntry(ev, true);
    if (e.cls != 0)
    {
        ++m_pendingOther;
    }
    m_events.insert(e);
}

void
HostFirstScheduler::Settle() const
{
    const Gate& gate = TheGate();
    if (!gate)
    {
        return;
    }
    // The gate may insert events (ops that arrived): look again after every wait.
    while (gate(!m_events.empty(), m_events.empty() ? 0 : m_events.begin()->ts))
    {
    }
}

bool
HostFirstScheduler::IsEmpty() const
{
    Settle();
    return m_events.empty();
}

Scheduler::Event
HostFirstScheduler::PeekNext() const
{
    Settle();
    const Entry& e = *m_events.begin();
    Event ev;
    ev.impl = e.impl;
    ev.key.m_ts = e.ts;
    ev.key.m_uid = e.uid;
    ev.key.m_context = e.context;
    return ev;
}

const HostFirstScheduler* HostFirstScheduler::s_current = nullptr;

uint64_t
HostFirstScheduler::PendingOtherEvents()
{
    return s_current ? s_current->m_pendingOther : 0;
}

bool
HostFirstScheduler::HostStepPendingExcept(const std::set<uint64_t>& keys)
{
    if (!s_current)
    {
        return false;
    }
    for (const auto& [uid, key] : s_current->m_hostKeys)
    {
        if (!keys.count(key))
        {
            return true;
        }
    }
    return false;
}

Scheduler::Event
HostFirstScheduler::RemoveNext()
{
    Event ev = PeekNext();
    if (m_events.begin()->cls != 0)
    {
        --m_pendingOther;
    }
    m_hostKeys.erase(ev.key.m_uid);
    m_events.erase(m_events.begin());
    return ev;
}

void
HostFirstScheduler::Remove(const Event& ev)
{
    const Entry e = MakeEntry(ev, false);
    if (m_events.erase(e) && e.cls != 0)
    {
        --m_pendingOther;
    }
    m_hostKeys.erase(ev.key.m_uid);
}

} // namespace ns3

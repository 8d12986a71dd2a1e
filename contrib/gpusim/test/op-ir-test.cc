// Op IR on disk: round trip, validation and clear errors for malformed input.
#include "ns3/job-builder.h"
#include "ns3/op-ir.h"
#include "test-temp-dir.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace ns3;
using namespace ns3::gpusim;

namespace
{
/// A new empty directory; all of them go when the test binary exits.
std::string
TempDir()
{
    static TestTempDir root("gpusim-opir");
    return root.NewDir("trace");
}

void
WriteText(const std::string& path, const std::string& text)
{
    std::ofstream(path) << text;
}

std::string
ManifestFor(uint32_t ranks)
{
    std::string m = R"({"format":"gpusim-trace","version":1,"source":"test","ranks":[)";
    for (uint32_t r = 0; r < ranks; ++r)
    {
        m += (r ? "," : "") + std::string(R"({"rank":)") + std::to_string(r) +
             R"(,"file":"rank-)" + std::to_string(r) + R"(.jsonl"})";
    }
    return m + "]}";
}

/// Expects ReadJobTrace to fail naming `file` (and `line` when > 0) and containing `what`.
void
ExpectBad(const std::string& rankText, const std::string& what, uint64_t line)
{
    std::string dir = TempDir();
    WriteText(dir + "/manifest.json", ManifestFor(1));
    WriteText(dir + "/rank-0.jsonl", rankText);
    try
    {
        ReadJobTrace(dir);
        FAIL() << "accepted malformed input: " << rankText;
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_EQ(e.File(), dir + "/rank-0.jsonl");
        EXPECT_EQ(e.Line(), line) << e.what();
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
}
} // namespace

TEST(OpIr, RoundTripPreservesEveryField)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("world").CreateStream(5, true, -1);
    b.Rank(0).Host(3.5).Kernel(5, "k<float>", 12.25).Gemm(5, 128, 256, 64, DataType::F16);
    b.Memcpy(0, MemcpyKind::DeviceToHost, 4096, false).Memset(5, 100);
    b.RecordEvent(9, 5).WaitEvent(0, 9).SyncEvent(9).SyncStream(5).SyncDevice();
    b.Malloc(0xabc, 1 << 20).Free(0xabc).Thread(1).Signal(3).Thread(0).Wait(3);
    b.Marker("ProfilerStep#1", MarkerPhase::Begin);
    b.AllRanks().AllReduce(5, "world", 1 << 20).Collective(5, CollKind::Broadcast, "world", 64,
                                                            DataType::BF16, 1);
    b.Rank(0).Send(5, "world", 1, 32, 7).Rank(1).Recv(5, "world", 0, 32, 7);
    JobTrace job = b.Build();
    job.metadata["preset"] = "dgx-h100";

    std::string dir = TempDir();
    WriteJobTrace(job, dir);
    JobTrace back = ReadJobTrace(dir);
    ValidateJobTrace(back);
    ASSERT_EQ(back.ranks.size(), 2u);
    EXPECT_EQ(back.metadata.at("preset"), "dgx-h100");
    for (size_t r = 0; r < 2; ++r)
    {
        ASSERT_EQ(back.ranks[r].ops.size(), job.ranks[r].ops.size());
        for (size_t i = 0; i < job.ranks[r].ops.size(); ++i)
        {
            // Serialising both gives the same line iff every written field survived.
            EXPECT_EQ(OpToJsonLine(back.ranks[r].ops[i]), OpToJsonLine(job.ranks[r].ops[i]));
        }
    }
    EXPECT_EQ(back.ranks[0].ops[3].gemm.k, 64u);
    EXPECT_EQ(back.ranks[0].ops[4].async, false);
}

TEST(OpIr, GemmSmMarginRoundTripsAndIsChecked)
{
    Op op;
    op.kind = OpKind::Kernel;
    op.name = "fc2";
    op.stream = 1;
    op.gemm.m = 1024;
    op.gemm.n = 2048;
    op.gemm.k = 4096;
    op.gemm.smMargin = 16;
    const std::string line = OpToJsonLine(op);
    EXPECT_NE(line.find("\"sm_margin\":16"), std::string::npos) << line;
    EXPECT_EQ(ParseOpLine(line, "f", 1).gemm.smMargin, 16u);
    op.gemm.smMargin = 0;
    EXPECT_EQ(OpToJsonLine(op).find("sm_margin"), std::string::npos); // absent when 0
    std::string bad = line;
    bad.replace(bad.find("16"), 2, "-3");
    EXPECT_THROW(ParseOpLine(bad, "f", 1), TraceFormatError);
}

TEST(OpIr, OneCopySendRecvFlagRoundTripsAndIsChecked)
{
    Op op;
    op.kind = OpKind::Collective;
    op.coll = CollKind::Send;
    op.comm = "tp";
    op.peer = 1;
    op.bytes = 4096;
    op.count = 2048;
    op.dtype = DataType::BF16;
    op.flags = kCollOneCopy;
    const std::string line = OpToJsonLine(op);
    EXPECT_NE(line.find("\"flags\":1"), std::string::npos) << line;
    EXPECT_EQ(ParseOpLine(line, "f", 1).flags, kCollOneCopy);
    op.flags = 0;
    EXPECT_EQ(OpToJsonLine(op).find("flags"), std::string::npos); // absent when 0
    std::string bad = line;
    bad.replace(bad.find("\"flags\":1"), 9, "\"flags\":4");
    EXPECT_THROW(ParseOpLine(bad, "f", 1), TraceFormatError);
}

TEST(OpIr, MalformedLinesNameFileLineAndReason)
{
    ExpectBad("{\"op\":\"kernel\"}\n{\"op\":\"kernel\",\"stream\":\n", "invalid JSON", 2);
    ExpectBad("{\"op\":\"teleport\"}\n", "unknown op 'teleport'", 1);
    ExpectBad("\n\n{\"op\":\"memcpy\",\"bytes\":-5}\n", "'bytes' must not be negative", 3);
    ExpectBad("{\"op\":\"event_record\"}\n", "missing required field 'event'", 1);
    ExpectBad("{\"op\":\"coll\",\"coll\":\"allreduce\"}\n", "missing required field 'comm'", 1);
    ExpectBad("{\"op\":\"kernel\",\"grid\":[1,2]}\n", "'grid'", 1);
    ExpectBad("[1,2,3]\n", "must be a JSON object", 1);
    ExpectBad("{\"op\":\"coll\",\"coll\":\"send\",\"comm\":\"c\"}\n", "needs 'peer'", 1);
    ExpectBad("{\"op\":\"kernel\",\"cpu_us\":\"fast\"}\n", "'cpu_us' must be a number", 1);
}

TEST(OpIr, PeerCopiesAndTf32GemmsRoundTripAndAreChecked)
{
    JobBuilder b(2);
    b.Rank(0).PeerCopy(1, 0, 1, 1 << 20).Gemm(1, 64, 64, 64, DataType::TF32).SyncDevice();
    std::string dir = TempDir();
    WriteJobTrace(b.Build(), dir);
    std::ifstream in(dir + "/rank-0.jsonl");
    std::string line;
    std::getline(in, line);
    EXPECT_NE(line.find("\"kind\":\"p2p\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"src_rank\":0,\"dst_rank\":1"), std::string::npos) << line;
    std::getline(in, line);
    EXPECT_NE(line.find("\"dtype\":\"tf32\""), std::string::npos) << line;
    JobTrace back = ReadJobTrace(dir);
    ValidateJobTrace(back);
    const Op& copy = back.ranks[0].ops[0];
    EXPECT_EQ(copy.copyKind, MemcpyKind::PeerToPeer);
    EXPECT_EQ(copy.srcRank, 0);
    EXPECT_EQ(copy.dstRank, 1);
    EXPECT_FALSE(copy.staged);
    EXPECT_EQ(back.ranks[0].ops[1].gemm.dtype, DataType::TF32);
    // A copy without a peer mapping (staged through host memory) keeps its mark.
    JobTrace stagedJob = b.Build();
    stagedJob.ranks[0].ops[0].staged = true;
    std::string stagedDir = TempDir();
    WriteJobTrace(stagedJob, stagedDir);
    std::ifstream stagedIn(stagedDir + "/rank-0.jsonl");
    std::getline(stagedIn, line);
    EXPECT_NE(line.find("\"staged\":true"), std::string::npos) << line;
    EXPECT_TRUE(ReadJobTrace(stagedDir).ranks[0].ops[0].staged);
    EXPECT_EQ(DataTypeSize(DataType::TF32), 4u) << "TF32 math on FP32 storage";

    ExpectBad("{\"op\":\"memcpy\",\"kind\":\"d2d\",\"src_rank\":1,\"dst_rank\":0}\n",
              "for p2p copies only", 1);
    ExpectBad("{\"op\":\"memcpy\",\"kind\":\"p2p\",\"src_rank\":1,\"dst_rank\":1}\n",
              "two different ranks", 1);
    ExpectBad("{\"op\":\"memcpy\",\"kind\":\"d2d\",\"staged\":true}\n", "'staged' is for p2p", 1);
    ExpectBad("{\"op\":\"memcpy\",\"kind\":\"p2p\",\"staged\":1}\n",
              "'staged' must be true or false", 1);
    ExpectBad("{\"op\":\"coll\",\"coll\":\"allreduce\",\"comm\":\"c\",\"dtype\":\"tf32\"}\n",
              "unknown dtype 'tf32'", 1);
    // A rank the job does not have.
    JobBuilder far(2);
    far.Rank(0).PeerCopy(1, 0, 5, 64);
    try
    {
        ValidateJobTrace(far.Build());
        FAIL() << "a p2p copy to rank 5 of a 2-rank job was accepted";
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_NE(std::string(e.what()).find("the job has 2 ranks"), std::string::npos) << e.what();
    }
}

TEST(OpIr, BadManifestIsRejected)
{
    std::string dir = TempDir();
    EXPECT_THROW(ReadJobTrace(dir), TraceFormatError); // no manifest at all
    WriteText(dir + "/manifest.json", R"({"format":"gpusim-trace","version":2,"ranks":[]})");
    try
    {
        ReadJobTrace(dir);
        FAIL();
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_NE(std::string(e.what()).find("unsupported version 2"), std::string::npos);
    }
    WriteText(dir + "/manifest.json",
              R"({"format":"gpusim-trace","version":1,"ranks":[{"rank":1,"file":"x"}]})");
    EXPECT_THROW(ReadJobTrace(dir), TraceFormatError);
}

TEST(OpIr, ValidationFindsMismatchedAndMissingCollectives)
{
    JobBuilder b(2);
    b.AllRanks().CommInit("c");
    b.Rank(0).AllReduce(1, "c", 1024);
    b.Rank(1).Collective(1, CollKind::AllGather, "c", 1024);
    try
    {
        ValidateJobTrace(b.Build());
        FAIL();
    }
    catch (const TraceFormatError& e)
    {
        std::string m = e.what();
        EXPECT_NE(m.find("collective mismatch on communicator c seq 0"), std::string::npos) << m;
    }
    JobBuilder b2(2);
    b2.AllRanks().CommInit("c");
    b2.Rank(0).AllReduce(1, "c", 1024);
    try
    {
        ValidateJobTrace(b2.Build());
        FAIL();
    }
    catch (const TraceFormatError& e)
    {
        EXPECT_NE(std::string(e.what()).find("ranks [1] never call it"), std::string::npos)
            << e.what();
    }
}

TEST(OpIr, WriteIsAtomicAndLeavesNoTempFiles)
{
    JobBuilder b(1);
    b.Kernel(1, "k", 1);
    std::string dir = TempDir();
    WriteJobTrace(b.Build(), dir);
    struct stat st;
    EXPECT_EQ(stat((dir + "/manifest.json.tmp").c_str(), &st), -1);
    EXPECT_EQ(stat((dir + "/rank-0.jsonl").c_str(), &st), 0);
}

"""ns-3's queue discs on an arrival sequence (run by bench/aqm_ns3.py under a
Python that has PyPI's `ns3`; not part of thinwire and not run in CI).

    python _ns3_qdisc.py ARRIVALS.csv RATE_BPS TYPE 'Attr=Value;Attr=Value'

Same driver as thinwire's `examples/qdisc_replay.rs`: a transmitter of RATE_BPS
dequeues when free (at once when idle); packets are IPv4/UDP, source port 1000 +
flow, ECT(0) when the file says so. Prints one JSON object: drops by reason,
marks, sojourn percentiles (ms) of the packets sent, per-flow counts."""

import json
import sys

import cppyy
from ns import ns  # noqa: F401  (loads the libraries)

cppyy.cppdef(r"""
#include <vector>
#include <map>
#include <string>
#include <cmath>
namespace twcmp {
using namespace ns3;
struct Arr { int64_t t; uint32_t size; uint32_t flow; bool ect; };
static Ptr<QueueDisc> q;
static std::vector<Arr> arr;
static bool busy = false;
static uint64_t rate = 0;
static std::vector<double> soj;
static std::map<uint32_t, uint64_t> per_flow;
static uint64_t ce_out = 0;

static Ptr<QueueDiscItem> item(const Arr& a) {
    Ptr<Packet> p = Create<Packet>(a.size - 28);
    UdpHeader u; u.SetSourcePort(1000 + a.flow); u.SetDestinationPort(9);
    p->AddHeader(u);
    Ipv4Header h;
    h.SetSource(Ipv4Address("10.0.0.1")); h.SetDestination(Ipv4Address("10.0.1.2"));
    h.SetProtocol(17); h.SetPayloadSize(a.size - 20); h.SetTtl(64);
    h.SetEcn(a.ect ? Ipv4Header::ECN_ECT0 : Ipv4Header::ECN_NotECT);
    return Create<Ipv4QueueDiscItem>(p, Address(), 0x0800, h);
}
static void Serve() {
    Ptr<QueueDiscItem> it = q->Dequeue();
    if (!it) { busy = false; return; }
    busy = true;
    soj.push_back((Simulator::Now() - it->GetTimeStamp()).GetSeconds() * 1e3);
    Ipv4Header h = DynamicCast<Ipv4QueueDiscItem>(it)->GetHeader();
    if (h.GetEcn() == Ipv4Header::ECN_CE) ce_out += 1;
    UdpHeader u; it->GetPacket()->PeekHeader(u);
    per_flow[u.GetSourcePort() - 1000] += 1;
    double bits = it->GetSize() * 8.0;
    int64_t ns_ = (int64_t)std::ceil(bits * 1e9 / (double)rate);
    Simulator::Schedule(NanoSeconds(ns_), &Serve);
}
static void Arrive(uint32_t i) {
    q->Enqueue(item(arr[i]));
    if (!busy) Serve();
}
static void Setup(std::string type, std::vector<std::string> attrs, uint64_t r) {
    rate = r;
    ObjectFactory f; f.SetTypeId(type);
    uint32_t quantum = 0;
    for (size_t k = 0; k + 1 < attrs.size(); k += 2) {
        // FqCoDel's quantum is a method, not an attribute (the device MTU otherwise).
        if (attrs[k] == "Quantum") quantum = std::stoul(attrs[k + 1]);
        else f.Set(attrs[k], StringValue(attrs[k + 1]));
    }
    q = f.Create<QueueDisc>();
    if (quantum) DynamicCast<FqCoDelQueueDisc>(q)->SetQuantum(quantum);
    q->Initialize();
    for (uint32_t i = 0; i < arr.size(); i++) Simulator::Schedule(NanoSeconds(arr[i].t), &Arrive, i);
    // PIE's update timer never stops by itself; a minute after the last arrival
    // every queue has drained.
    if (!arr.empty()) Simulator::Stop(NanoSeconds(arr.back().t) + Seconds(60));
}
static void Run() { Simulator::Run(); Simulator::Destroy(); }
}
""")


def main() -> None:
    path, rate, typ, attrs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    g = cppyy.gbl.twcmp
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            t, size, flow, ect = (int(x) for x in line.split(","))
            a = g.Arr()
            a.t, a.size, a.flow, a.ect = t, size, flow, bool(ect)
            g.arr.push_back(a)
    kv = cppyy.gbl.std.vector[cppyy.gbl.std.string]()
    for pair in filter(None, attrs.split(";")):
        k, v = pair.split("=", 1)
        kv.push_back(k.strip())
        kv.push_back(v.strip())
    g.Setup(typ, kv, rate)
    g.Run()
    st = g.q.GetStats()
    drops = {str(k): int(v) for k, v in st.nDroppedPacketsBeforeEnqueue}
    drops.update({str(k): drops.get(str(k), 0) + int(v) for k, v in st.nDroppedPacketsAfterDequeue})
    marks = {str(k): int(v) for k, v in st.nMarkedPackets}
    soj = sorted(g.soj)

    def pct(p):
        return soj[round((len(soj) - 1) * p)] if soj else 0.0

    out = json.dumps(
        {
            "packets": int(g.arr.size()),
            "sent": len(soj),
            "drops": drops,
            "marks": sum(marks.values()),
            "ce_sent": int(g.ce_out),
            "mark_reasons": marks,
            "sojourn_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "mean": sum(soj) / max(1, len(soj))},
            "per_flow": {str(k): int(v) for k, v in g.per_flow},
        }
    )
    print(out, flush=True)
    # ns-3's static destructors crash at exit after Simulator::Destroy in this
    # embedding; the result is out, leave without them.
    import os

    os._exit(0)


if __name__ == "__main__":
    main()

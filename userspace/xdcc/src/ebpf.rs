//! Loading and attaching the eBPF programs (`ebpf/programs`, embedded at
//! build time) and reading their maps.

use std::{fs::File, path::Path};

use anyhow::{anyhow, bail, Context, Result};
use aya::{
    maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray},
    programs::{links::CgroupAttachMode, SchedClassifier, SockOps, TcAttachType},
    Ebpf, EbpfLoader,
};
use xdcc_common::markers::{AmrtConfig, AmrtStats, LossConfig, LossStats, MarkCeConfig, MarkCeStats, PhantomConfig, PhantomStats};
use xdcc_common::{Config, Counters, FlowKey, FlowStats, PathHealth};

/// The object built by build.rs from ebpf/programs.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/xdcc-ebpf.o"));

pub fn load() -> Result<Ebpf> {
    load_with(None)
}

/// Loads the object with the flow table sized for `max_open_flows` (the
/// agent's), or as compiled.
pub fn load_with(max_open_flows: Option<u32>) -> Result<Ebpf> {
    if OBJECT.is_empty() {
        anyhow::bail!("this xdcc was built without its eBPF programs (XDCC_NO_BPF): rebuild without it");
    }
    bump_memlock();
    let mut loader = EbpfLoader::new();
    if let Some(n) = max_open_flows {
        loader.map_max_entries("FLOWS", n);
    }
    loader.load(OBJECT).context("loading the xdcc eBPF object (are you root?)")
}

/// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK.
fn bump_memlock() {
    let _ = nix::sys::resource::setrlimit(
        nix::sys::resource::Resource::RLIMIT_MEMLOCK,
        nix::sys::resource::RLIM_INFINITY,
        nix::sys::resource::RLIM_INFINITY,
    );
}

/// Attaches the sock_ops program to a cgroup2 directory.
pub fn attach_sockops(bpf: &mut Ebpf, cgroup: &Path) -> Result<()> {
    let dir = File::open(cgroup).with_context(|| format!("opening cgroup {}", cgroup.display()))?;
    if !is_cgroup2(cgroup) {
        bail!("{} is not a cgroup2 directory (mount one with `mount -t cgroup2 none DIR`)", cgroup.display());
    }
    let prog: &mut SockOps = bpf.program_mut("xdcc_sockops").context("program xdcc_sockops")?.try_into()?;
    prog.load().context("loading xdcc_sockops into the kernel")?;
    prog.attach(dir, CgroupAttachMode::Single).with_context(|| format!("attaching sock_ops to {}", cgroup.display()))?;
    Ok(())
}

fn is_cgroup2(p: &Path) -> bool {
    nix::sys::statfs::statfs(p).map(|s| s.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC).unwrap_or(false)
}

/// Loads a tc program (once) and attaches it to an interface's hook (TCX on
/// Linux >= 6.6, so it coexists with other tc programs).
pub fn attach_tc(bpf: &mut Ebpf, program: &str, iface: &str, hook: TcAttachType) -> Result<()> {
    let prog: &mut SchedClassifier = bpf.program_mut(program).with_context(|| format!("program {program}"))?.try_into()?;
    if prog.fd().is_err() {
        prog.load().with_context(|| format!("loading {program} into the kernel"))?;
    }
    if hook == TcAttachType::Ingress || hook == TcAttachType::Egress {
        // Only needed on kernels without TCX; harmless (EEXIST) otherwise.
        let _ = aya::programs::tc::qdisc_add_clsact(iface);
    }
    prog.attach(iface, hook).with_context(|| format!("attaching {program} to {iface} ({hook:?})"))?;
    Ok(())
}

pub fn flows_map(bpf: &mut Ebpf) -> Result<BpfHashMap<&mut MapData, FlowKey, FlowStats>> {
    Ok(BpfHashMap::try_from(bpf.map_mut("FLOWS").ok_or_else(|| anyhow!("map FLOWS missing"))?)?)
}

/// The ring buffer of closed flows' final records (the agent reads it).
pub fn take_closed_ring(bpf: &mut Ebpf) -> Result<aya::maps::RingBuf<MapData>> {
    let m = bpf.take_map("CLOSED").ok_or_else(|| anyhow!("map CLOSED missing"))?;
    Ok(aya::maps::RingBuf::try_from(m)?)
}

/// One record of the CLOSED ring buffer.
pub fn parse_closed(b: &[u8]) -> Option<(FlowKey, FlowStats)> {
    if b.len() < std::mem::size_of::<xdcc_common::ClosedFlow>() {
        return None;
    }
    // SAFETY: at least size_of::<ClosedFlow>() bytes; ClosedFlow is plain
    // data (integers and arrays) for which every bit pattern is valid, and
    // read_unaligned does not need alignment.
    let c: xdcc_common::ClosedFlow = unsafe { std::ptr::read_unaligned(b.as_ptr() as *const _) };
    Some((c.key, c.stats))
}

pub fn read_flows(bpf: &mut Ebpf) -> Result<Vec<(FlowKey, FlowStats)>> {
    let map = flows_map(bpf)?;
    // entries can vanish (LRU) while iterating: skip those errors
    Ok(map.iter().filter_map(|r| r.ok()).collect())
}

pub fn set_config(bpf: &mut Ebpf, cfg: &Config) -> Result<()> {
    let mut a: Array<&mut MapData, Config> = Array::try_from(bpf.map_mut("CONFIG").context("map CONFIG")?)?;
    a.set(0, *cfg, 0).context("writing the CONFIG map")?;
    Ok(())
}

pub fn counters(bpf: &mut Ebpf) -> Result<Counters> {
    let a: PerCpuArray<&mut MapData, Counters> =
        PerCpuArray::try_from(bpf.map_mut("COUNTERS").context("map COUNTERS")?)?;
    let per_cpu = a.get(&0, 0)?;
    let mut sum = Counters::default();
    for c in per_cpu.iter() {
        sum.flows_opened += c.flows_opened;
        sum.flows_closed += c.flows_closed;
        sum.reroutes += c.reroutes;
        sum.untracked_packets += c.untracked_packets;
        sum.insert_failures += c.insert_failures;
        sum.labels_rewritten += c.labels_rewritten;
        sum.closed_ring_full += c.closed_ring_full;
        sum.open_flows_evicted += c.open_flows_evicted;
    }
    Ok(sum)
}

pub fn path_health(bpf: &mut Ebpf) -> Result<Vec<([u8; 16], PathHealth)>> {
    let m: BpfHashMap<&mut MapData, [u8; 16], PathHealth> =
        BpfHashMap::try_from(bpf.map_mut("PATH_HEALTH").context("map PATH_HEALTH")?)?;
    Ok(m.iter().filter_map(|r| r.ok()).collect())
}

/// The test CE marker: CE on every `every`-th ECT data packet (0 = off).
pub fn mark_ce_set(bpf: &mut Ebpf, every: u64) -> Result<()> {
    let mut a: Array<&mut MapData, MarkCeConfig> = Array::try_from(bpf.map_mut("MARK_CE_CFG").context("map MARK_CE_CFG")?)?;
    a.set(0, MarkCeConfig { every_n: every }, 0)?;
    Ok(())
}

pub fn mark_ce_stats(bpf: &mut Ebpf) -> Result<MarkCeStats> {
    let a: Array<&mut MapData, MarkCeStats> = Array::try_from(bpf.map_mut("MARK_CE_STATS").context("map MARK_CE_STATS")?)?;
    Ok(a.get(&0, 0)?)
}

/// The loss injector's model (`LossConfig`; block 0 = off).
pub fn loss_set(bpf: &mut Ebpf, cfg: &LossConfig) -> Result<()> {
    let mut a: Array<&mut MapData, LossConfig> = Array::try_from(bpf.map_mut("LOSS_CFG").context("map LOSS_CFG")?)?;
    a.set(0, *cfg, 0)?;
    Ok(())
}

pub fn loss_stats(bpf: &mut Ebpf) -> Result<LossStats> {
    let a: Array<&mut MapData, LossStats> = Array::try_from(bpf.map_mut("LOSS_STATS").context("map LOSS_STATS")?)?;
    Ok(a.get(&0, 0)?)
}

/// CLOCK_MONOTONIC in ns: the clock of `bpf_ktime_get_ns`.
pub fn ktime_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap_or(nix::sys::time::TimeSpec::new(0, 0));
    (t.tv_sec() as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec() as u64)
}

/// Asks sock_ops to move a flow at its next round or RTO.
pub fn force_reroute(bpf: &mut Ebpf, key: &FlowKey) -> Result<()> {
    let mut m: BpfHashMap<&mut MapData, FlowKey, u32> =
        BpfHashMap::try_from(bpf.map_mut("FORCE").context("map FORCE")?)?;
    m.insert(key, 1, 0).context("writing the FORCE map")?;
    Ok(())
}

/// Fills the `CC_POLICY` LPM trie: one entry per (prefix length, address as
/// 16 bytes, policy), in the order given (the `[[policy]]` entries, already
/// encoded by `config::PolicyEntry::key` and `value`).
pub fn policy_set(bpf: &mut Ebpf, entries: &[(u32, [u8; 16], xdcc_common::CcPolicy)]) -> Result<()> {
    let mut m: aya::maps::lpm_trie::LpmTrie<&mut MapData, [u8; 16], xdcc_common::CcPolicy> =
        aya::maps::lpm_trie::LpmTrie::try_from(bpf.map_mut("CC_POLICY").context("map CC_POLICY")?)?;
    for (len, addr, policy) in entries {
        m.insert(&aya::maps::lpm_trie::Key::new(*len, *addr), policy, 0)
            .with_context(|| format!("writing [[policy]] #{} to CC_POLICY", policy.index))?;
    }
    Ok(())
}

/// Configures Uno's phantom-queue marker.
pub fn phantom_set(bpf: &mut Ebpf, cfg: &PhantomConfig) -> Result<()> {
    let mut a: Array<&mut MapData, PhantomConfig> =
        Array::try_from(bpf.map_mut("PHANTOM_CFG").context("map PHANTOM_CFG")?)?;
    a.set(0, *cfg, 0)?;
    Ok(())
}

pub fn phantom_stats(bpf: &mut Ebpf) -> Result<PhantomStats> {
    let a: Array<&mut MapData, PhantomStats> =
        Array::try_from(bpf.map_mut("PHANTOM_STATS").context("map PHANTOM_STATS")?)?;
    Ok(a.get(&0, 0)?)
}

/// Configures AMRT's anti-ECN marker.
pub fn amrt_set(bpf: &mut Ebpf, cfg: &AmrtConfig) -> Result<()> {
    let mut a: Array<&mut MapData, AmrtConfig> = Array::try_from(bpf.map_mut("AMRT_CFG").context("map AMRT_CFG")?)?;
    a.set(0, *cfg, 0)?;
    Ok(())
}

pub fn amrt_stats(bpf: &mut Ebpf) -> Result<AmrtStats> {
    let a: Array<&mut MapData, AmrtStats> = Array::try_from(bpf.map_mut("AMRT_STATS").context("map AMRT_STATS")?)?;
    Ok(a.get(&0, 0)?)
}

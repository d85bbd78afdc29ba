//! The BPF struct_ops backend: bpf_uno, bpf_gemini, bpf_oscar and
//! bpf_smartt, the same algorithm and Linux-adapter source as the kernel
//! modules (kmods/bpf/), for stock kernels with BTF and BPF struct_ops TCP
//! congestion control (any distribution kernel >= 6.4, which also has the
//! struct_ops links used here).
//!
//! `load` registers a CC through a struct_ops link and pins the link and the
//! configuration map under `<bpffs>/xdcc/bpf_<cc>/`, so the CC outlives the
//! CLI; `unload` removes the pins, which unregisters the name (sockets that
//! still use it keep running on it until they close). Tunables are one value
//! in the configuration map, replaced as a whole after the same validation
//! as the modules' sysctls (`linux::Config`).

use std::{
    fs,
    net::{IpAddr, Ipv6Addr, SocketAddr},
    os::fd::{AsFd, AsRawFd},
    path::PathBuf,
};

use crate::failure::{bad_value, kernel_refused};
use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle, ObjectBuilder};
use serde::Serialize;
use xdcc_algo::{linux, with_cc, NetConfig, Tunables};


// The embedded objects, one per CC of the algorithm crate's list (built and
// listed by build.rs with kmods/bpf/build.sh).
include!(concat!(env!("OUT_DIR"), "/bpf-cc/objects.rs"));

/// Every pin of a loaded `bpf_<cc>` (in `pin_dir`).
const PINS: [&str; 5] = ["link", "config", "flows", "trace", "trace_on"];
/// The per-ACK trace's maps (shim.c) and their pins.
const TRACE_PINS: [(&str, &str); 2] = [("xdcc_trace", "trace"), ("xdcc_trace_on", "trace_on")];

/// Size of the configuration map's value (kmods/bpf/shim.c, entry.rs).
use xdcc_algo::linux::CONFIG_BYTES;
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// `uno` or `bpf_uno` → `uno`.
pub fn algo_name(cc: &str) -> Result<&'static str> {
    let base = cc.strip_prefix("bpf_").unwrap_or(cc);
    OBJECTS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == base)
        .ok_or_else(|| {
            let known: Vec<String> = OBJECTS.iter().map(|(n, _)| format!("bpf_{n}")).collect();
            bad_value(format!("unknown BPF congestion control `{cc}` (xdcc has {})", known.join(", ")))
        })
}

/// Root of the BPF file system: $XDCC_BPFFS or /sys/fs/bpf.
pub fn bpffs() -> PathBuf {
    std::env::var_os("XDCC_BPFFS").map(PathBuf::from).unwrap_or_else(|| "/sys/fs/bpf".into())
}

fn pin_dir(algo: &str) -> PathBuf {
    bpffs().join("xdcc").join(format!("bpf_{algo}"))
}

/// Whether `bpf_<cc>` is loaded by xdcc (its link is pinned).
pub fn is_loaded(algo: &str) -> bool {
    pin_dir(algo).join("link").exists()
}

/// Mounts the BPF file system at `bpffs()` if nothing is mounted there.
fn ensure_bpffs() -> Result<()> {
    let root = bpffs();
    if let Ok(st) = nix::sys::statfs::statfs(&root) {
        if st.filesystem_type().0 as i64 == BPF_FS_MAGIC {
            return Ok(());
        }
    }
    fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    nix::mount::mount(Some("bpf"), &root, Some("bpf"), nix::mount::MsFlags::empty(), None::<&str>)
        .map_err(|e| anyhow!("mounting the BPF file system at {}: {e} (root needed)", root.display()))
}

#[derive(Debug, Serialize)]
pub struct LoadReport {
    /// The name in tcp_available_congestion_control.
    pub name: String,
    pub pinned: String,
    /// Instructions the verifier processed per program (of its 1M budget).
    pub verified_insns: Vec<(String, u32)>,
}

/// Loads and registers `bpf_<cc>` with its default configuration; with
/// `replace`, swaps the programs of an already registered `bpf_<cc>` for
/// this binary's in place (see `replace_in_place`).
pub fn load(cc: &str, replace: bool) -> Result<LoadReport> {
    let algo = algo_name(cc)?;
    let name = format!("bpf_{algo}");
    let dir = pin_dir(algo);
    let loaded = is_loaded(algo);
    if loaded && !replace {
        bail!(
            "{name} is already loaded ({}); unload it first (xdcc cc unload {algo} --bpf) or replace it in place \
             (xdcc cc load {algo} --bpf --replace)",
            dir.display()
        );
    }
    if replace && !loaded {
        bail!("{name} is not loaded by xdcc, nothing to replace: xdcc cc load {algo} --bpf");
    }
    ensure_bpffs()?;
    let mut open = open_object(algo)?;
    // The equivalence test's replay harness is not part of the CC.
    for mut p in open.progs_mut() {
        if p.name().to_str() == Some(&replay_name(algo)) {
            p.set_autoload(false);
        }
    }
    let mut obj = open.load().map_err(|e| {
        kernel_refused(format!(
            "the kernel refused {name}: {e}\n(needs BTF, BPF struct_ops TCP congestion control and struct_ops links: \
             Linux >= 6.4 with CONFIG_DEBUG_INFO_BTF; the verifier's log is above)"
        ))
    })?;
    let verified_insns = obj
        .progs()
        .filter(|p| p.name().to_str() != Some(&replay_name(algo)))
        .map(|p| (p.name().to_string_lossy().into_owned(), verified_insns(p.as_fd().as_raw_fd())))
        .collect();
    // A replacement keeps the tunables in force (validated as this binary
    // reads them); a new CC starts from the defaults.
    let config = if replace { current_config(algo)? } else { default_config(algo) };
    obj.maps()
        .find(|m| m.name() == "xdcc_config")
        .ok_or_else(|| anyhow!("{name}: no xdcc_config map in the object"))?
        .update(&0u32.to_ne_bytes(), &config, MapFlags::ANY)
        .with_context(|| format!("{name}: writing the configuration"))?;
    let iter_name = flow_iter_name(algo);
    let mut flows = obj
        .progs_mut()
        .find(|p| p.name().to_str() == Some(&iter_name))
        .ok_or_else(|| anyhow!("no {iter_name} program in the object"))?
        .attach()
        .context("attaching the flow iterator")?;
    if obj.maps().all(|m| m.name() != "xdcc_ops") {
        bail!("{name}: no struct_ops map in the object");
    }
    if replace {
        // New pins beside the old ones (bpffs names cannot contain dots),
        // the swap, then the new pins renamed over the old: `tunable set`
        // always reaches the configuration the running programs read.
        let (cfg_new, flows_new) = (dir.join("config_new"), dir.join("flows_new"));
        let new_pin = |pin: &str| dir.join(format!("{pin}_new"));
        let mut swap = || -> Result<()> {
            let mut config = obj.maps_mut().find(|m| m.name() == "xdcc_config").expect("found above");
            config.pin(&cfg_new).context("pinning the new configuration map")?;
            flows.pin(&flows_new).context("pinning the new flow iterator")?;
            for (map, pin) in TRACE_PINS {
                obj.maps_mut().find(|m| m.name() == map).ok_or_else(|| anyhow!("{name}: no {map} map"))?.pin(new_pin(pin))?;
            }
            let mut ops = obj.maps_mut().find(|m| m.name() == "xdcc_ops").expect("found above");
            replace_in_place(&name, &mut ops, &dir)
        };
        if let Err(e) = swap() {
            let _ = fs::remove_file(&cfg_new);
            let _ = fs::remove_file(&flows_new);
            for (_, pin) in TRACE_PINS {
                let _ = fs::remove_file(new_pin(pin));
            }
            return Err(e);
        }
        fs::rename(&cfg_new, dir.join("config")).context("replacing the configuration pin")?;
        fs::rename(&flows_new, dir.join("flows")).context("replacing the flow iterator pin")?;
        for (_, pin) in TRACE_PINS {
            fs::rename(new_pin(pin), dir.join(pin)).context("replacing the trace pins")?;
        }
        return Ok(LoadReport { name, pinned: dir.display().to_string(), verified_insns });
    }
    let mut ops = obj
        .maps_mut()
        .find(|m| m.name() == "xdcc_ops")
        .ok_or_else(|| anyhow!("{name}: no struct_ops map in the object"))?;
    let mut link = ops.attach_struct_ops().map_err(|e| {
        if e.kind() == libbpf_rs::ErrorKind::AlreadyExists {
            kernel_refused(format!("the kernel already has a congestion control named {name} (loaded by another tool?)"))
        } else {
            kernel_refused(format!("registering {name}: {e}"))
        }
    })?;
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut pin = || -> Result<()> {
        let mut config = obj.maps_mut().find(|m| m.name() == "xdcc_config").expect("found above");
        config.pin(dir.join("config")).context("pinning the configuration map")?;
        flows.pin(dir.join("flows")).context("pinning the flow iterator")?;
        for (map, pin) in TRACE_PINS {
            obj.maps_mut().find(|m| m.name() == map).ok_or_else(|| anyhow!("{name}: no {map} map"))?.pin(dir.join(pin))?;
        }
        link.pin(dir.join("link")).context("pinning the struct_ops link")?;
        Ok(())
    };
    if let Err(e) = pin() {
        // Dropping the link unregisters the CC again: nothing stays behind.
        for f in PINS {
            let _ = fs::remove_file(dir.join(f));
        }
        let _ = fs::remove_dir(&dir);
        return Err(e);
    }
    Ok(LoadReport { name, pinned: dir.display().to_string(), verified_insns })
}

/// Points the pinned struct_ops link of a registered CC at the new object's
/// struct_ops map (`BPF_LINK_UPDATE`, what libbpf's `bpf_link__update_map`
/// does): the kernel swaps the ops under the same name
/// (`tcp_update_congestion_control`); new sockets get the new programs,
/// existing ones keep the old until they close. The map's value must be set
/// first: libbpf sets it when attaching, and the attach itself then fails
/// with EEXIST because the name is taken, which is expected here.
fn replace_in_place(name: &str, ops: &mut libbpf_rs::MapMut, dir: &std::path::Path) -> Result<()> {
    use libbpf_rs::libbpf_sys as sys;
    match ops.attach_struct_ops() {
        Err(e) if e.kind() == libbpf_rs::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(kernel_refused(format!("preparing the new {name}: {e}"))),
        Ok(_) => bail!("{name} was not registered any more (unloaded meanwhile?): load it again"),
    }
    let link = libbpf_rs::Link::open(dir.join("link")).with_context(|| format!("opening {}", dir.join("link").display()))?;
    let link_fd = link.as_fd().as_raw_fd();
    // SAFETY: two valid descriptors (the link and the map stay open for the
    // call); a null `opts` is allowed.
    let r = unsafe { sys::bpf_link_update(link_fd, ops.as_fd().as_raw_fd(), std::ptr::null()) };
    if r < 0 {
        return Err(kernel_refused(format!("replacing {name} in place: {}", std::io::Error::from_raw_os_error(-r))));
    }
    Ok(())
}

/// The configuration map's value of a loaded CC, checked by this binary's
/// codec (a replacement must not carry over a value it cannot read).
fn current_config(algo: &str) -> Result<[u8; CONFIG_BYTES]> {
    let v = config_map(algo)?
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)?
        .ok_or_else(|| anyhow!("bpf_{algo}: empty configuration map"))?;
    let mut b = [0u8; CONFIG_BYTES];
    if v.len() != CONFIG_BYTES {
        bail!("bpf_{algo}: configuration of {} bytes, this xdcc expects {CONFIG_BYTES}", v.len());
    }
    b.copy_from_slice(&v);
    let ok = with_cc!(algo, |C, P| linux::Config::<P>::read_bytes(&b).is_some(), _ => false);
    if !ok {
        bail!("bpf_{algo}: the loaded configuration is not valid for this xdcc; unload and load instead");
    }
    Ok(b)
}

/// The embedded object of `bpf_<algo>`, opened (not loaded).
pub(crate) fn open_object(algo: &str) -> Result<libbpf_rs::OpenObject> {
    let name = format!("bpf_{algo}");
    let bytes = OBJECTS.iter().find(|(n, _)| *n == algo).map(|(_, b)| *b).ok_or_else(|| anyhow!("no {name}"))?;
    if bytes.is_empty() {
        bail!("this xdcc was built without its BPF congestion controls (XDCC_NO_BPF): rebuild without it for {name}");
    }
    ObjectBuilder::default()
        .name(&name)
        .with_context(|| format!("naming {name}"))?
        .open_memory(bytes)
        .with_context(|| format!("opening the {name} object"))
}

/// The name of a CC's replay harness program (shim.c).
pub(crate) fn replay_name(algo: &str) -> String {
    format!("replay_{algo}")
}

/// `bpf_prog_info.verified_insns` of a program fd.
fn verified_insns(fd: i32) -> u32 {
    let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is a valid, writable bpf_prog_info of `len` bytes; the
    // kernel writes at most `len` bytes and no pointer fields are set.
    let r = unsafe {
        libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info as *mut _ as *mut _, &mut len)
    };
    if r == 0 {
        info.verified_insns
    } else {
        0
    }
}

/// Unregisters `bpf_<cc>`: removes its pins. Sockets that use it keep it
/// alive until they close; new ones can no longer select it.
pub fn unload(cc: &str) -> Result<()> {
    let algo = algo_name(cc)?;
    let dir = pin_dir(algo);
    if !is_loaded(algo) {
        bail!("bpf_{algo} is not loaded by xdcc ({} does not exist)", dir.join("link").display());
    }
    fs::remove_file(dir.join("link")).with_context(|| format!("removing {}", dir.join("link").display()))?;
    for f in PINS {
        let _ = fs::remove_file(dir.join(f));
    }
    let _ = fs::remove_dir(&dir);
    Ok(())
}

// ------------------------------------------------------------ flow state

/// One flow of a BPF CC with its CC state (a record of the pinned flow
/// iterator, `struct xdcc_flow_record` in shim.c).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowInfo {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// `bpf_uno`, ...
    pub cc: String,
    pub info: linux::CcInfo,
}

const RECORD_BYTES: usize = 16 + 16 + 2 + 2 + 4 + linux::CcInfo::BYTES;

/// Decodes the records of one read of a flow iterator.
pub fn parse_flow_records(cc: &str, bytes: &[u8]) -> Result<Vec<FlowInfo>> {
    if bytes.len() % RECORD_BYTES != 0 {
        bail!("{cc}: flow iterator returned {} bytes, not a multiple of {RECORD_BYTES}", bytes.len());
    }
    bytes
        .chunks_exact(RECORD_BYTES)
        .map(|r| {
            let addr = |b: &[u8], port: &[u8]| {
                let ip = Ipv6Addr::from(<[u8; 16]>::try_from(b).expect("16 bytes"));
                SocketAddr::new(IpAddr::V6(ip).to_canonical(), u16::from_ne_bytes([port[0], port[1]]))
            };
            let info = linux::CcInfo::from_bytes(&r[40..])
                .ok_or_else(|| anyhow!("{cc}: flow record of unknown version {} (xdcc and the loaded CC differ?)", r[40]))?;
            Ok(FlowInfo { local: addr(&r[0..16], &r[32..34]), remote: addr(&r[16..32], &r[34..36]), cc: cc.into(), info })
        })
        .collect()
}

/// The name of a CC's flow iterator program (shim.c).
fn flow_iter_name(algo: &str) -> String {
    format!("flows_{algo}")
}

/// The CC state of every flow of this network namespace that runs a BPF CC
/// loaded by xdcc (nothing when none is loaded, or without the privilege to
/// see BPF programs). The iterator programs are found by name among the
/// kernel's programs rather than through their pins: `ip netns exec` mounts
/// a fresh /sys, which hides the host's /sys/fs/bpf.
pub fn flow_infos() -> Result<Vec<FlowInfo>> {
    let mut out = Vec::new();
    for info in libbpf_rs::query::ProgInfoIter::default() {
        let Some(algo) = OBJECTS.iter().map(|(a, _)| *a).find(|a| info.name.to_str() == Some(&flow_iter_name(a)))
        else {
            continue;
        };
        if info.ty != libbpf_rs::ProgramType::Tracing {
            continue;
        }
        // The program may go away between listing and opening (unloaded).
        let Ok(bytes) = read_iter(info.id) else { continue };
        // (One CC's unreadable records, e.g. from an older binary's
        // layout, leave the others' shown.)
        match parse_flow_records(&format!("bpf_{algo}"), &bytes) {
            Ok(v) => out.extend(v),
            Err(e) => log::warn!("{e:#}"),
        }
    }
    Ok(out)
}

/// Runs the iterator program `id` once and returns what it wrote.
fn read_iter(id: u32) -> Result<Vec<u8>> {
    use libbpf_rs::libbpf_sys as sys;
    use std::{io::Read, os::fd::FromRawFd};
    let owned = |fd: i32, what: &str| -> Result<std::os::fd::OwnedFd> {
        if fd < 0 {
            bail!("{what}: {}", std::io::Error::from_raw_os_error(-fd));
        }
        // SAFETY: a new descriptor the call just returned; nothing else owns it.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    };
    // SAFETY: plain syscall wrappers on integer arguments; a null `opts` is
    // allowed for bpf_link_create.
    let prog = owned(unsafe { sys::bpf_prog_get_fd_by_id(id) }, "opening the flow iterator")?;
    // SAFETY: as above.
    let link = owned(
        unsafe { sys::bpf_link_create(prog.as_raw_fd(), 0, sys::BPF_TRACE_ITER, std::ptr::null()) },
        "attaching the flow iterator",
    )?;
    // SAFETY: as above.
    let iter = owned(unsafe { sys::bpf_iter_create(link.as_raw_fd()) }, "starting the flow iterator")?;
    let mut bytes = Vec::new();
    fs::File::from(iter).read_to_end(&mut bytes).context("reading the flow iterator")?;
    Ok(bytes)
}

// ---------------------------------------------------------------- tunables

pub(crate) fn default_config(algo: &str) -> [u8; CONFIG_BYTES] {
    let mut b = [0u8; CONFIG_BYTES];
    let net = NetConfig::LINUX_DEFAULT;
    let ok = with_cc!(algo, |C, P| linux::Config::<P>::for_net(&net).write_bytes(&mut b), _ => unreachable!("algo_name checked it"));
    assert!(ok, "entry.rs asserts every Config fits {CONFIG_BYTES} bytes");
    b
}

fn config_map(algo: &str) -> Result<MapHandle> {
    let p = pin_dir(algo).join("config");
    if !is_loaded(algo) {
        bail!("bpf_{algo} is not loaded (xdcc cc load {algo} --bpf)");
    }
    MapHandle::from_pinned_path(&p).with_context(|| format!("opening {}", p.display()))
}

/// The knobs of a BPF CC, as the modules' sysctl files
/// (`linux::Config::knob_names`).
fn names<P: Tunables>() -> Vec<&'static str> {
    linux::Config::<P>::knob_names().collect()
}

fn values<P: Tunables>(c: &linux::Config<P>) -> Vec<(String, u64)> {
    linux::Config::<P>::knob_names().map(|k| (k.to_string(), c.get(k).unwrap_or(0))).collect()
}

fn read<P: Tunables>(algo: &str, map: &MapHandle) -> Result<linux::Config<P>> {
    let b = map
        .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .with_context(|| format!("reading bpf_{algo}'s configuration"))?
        .ok_or_else(|| anyhow!("bpf_{algo}'s configuration map is empty (reload it)"))?;
    linux::Config::<P>::read_bytes(&b).ok_or_else(|| anyhow!("bpf_{algo}'s configuration map holds an invalid set (reload it)"))
}

/// `name = value` applied to a copy of `c`, by the rules of every backend
/// (`linux::Config::set`).
fn apply<P: Tunables>(c: &linux::Config<P>, name: &str, value: u64) -> Result<linux::Config<P>> {
    if !linux::Config::<P>::knob_names().any(|k| k == name) {
        return Err(bad_value(format!("`{name}` is not a tunable (known: {})", names::<P>().join(", "))));
    }
    c.set(name, value).map_err(|e| bad_value(format!("{name} = {value} rejected: {e}")))
}

fn write<P: Tunables>(algo: &str, map: &MapHandle, c: &linux::Config<P>) -> Result<()> {
    let mut b = [0u8; CONFIG_BYTES];
    if !c.write_bytes(&mut b) {
        bail!("configuration does not fit {CONFIG_BYTES} bytes");
    }
    // One element replaced as a whole: an ACK sees the old or the new set.
    map.update(&0u32.to_ne_bytes(), &b, MapFlags::ANY).with_context(|| format!("writing bpf_{algo}'s configuration"))
}

/// A loaded BPF CC's configuration map (a [`crate::tunables::TunableStore`]).
pub struct ConfigMap {
    algo: &'static str,
    map: MapHandle,
}

impl ConfigMap {
    pub fn open(cc: &str) -> Result<Self> {
        let algo = algo_name(cc)?;
        Ok(ConfigMap { algo, map: config_map(algo)? })
    }
}

fn set_for<P: Tunables>(algo: &str, map: &MapHandle, name: &str, value: u64) -> Result<()> {
    let cur = read::<P>(algo, map)?;
    if !names::<P>().contains(&name) {
        return Err(bad_value(format!("`{name}` is not a tunable of bpf_{algo} (known: {})", names::<P>().join(", "))));
    }
    let new = apply(&cur, name, value)?;
    write(algo, map, &new)
}

impl ConfigMap {
    /// Every knob with its current value.
    pub fn list(&self) -> Result<Vec<(String, u64)>> {
        let algo = self.algo;
        with_cc!(algo, |C, P| Ok(values(&read::<P>(algo, &self.map)?)), _ => unreachable!("algo_name checked it"))
    }

    /// Replaces the whole configuration; on any error nothing changes.
    pub fn set(&self, name: &str, value: u64) -> Result<()> {
        let algo = self.algo;
        with_cc!(algo, |C, P| set_for::<P>(algo, &self.map, name, value), _ => unreachable!("algo_name checked it"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdcc_algo::{gemini, uno};

    #[test]
    fn names_resolve_with_or_without_the_prefix() {
        assert_eq!(algo_name("bpf_uno").unwrap(), "uno");
        assert_eq!(algo_name("smartt").unwrap(), "smartt");
        assert!(algo_name("cubic").unwrap_err().to_string().contains("bpf_gemini"));
    }

    #[test]
    fn flow_records_decode_and_bad_reads_are_refused() {
        let info = linux::CcInfo { version: linux::CcInfo::VERSION, flags: 1 | 5 << linux::CcInfo::IDLE_SHIFT, rtos: 2, recoveries: 3, values: [20, 7, 8192, 65536] };
        let mut rec = Vec::new();
        rec.extend_from_slice(&[0; 10]);
        rec.extend_from_slice(&[0xff, 0xff, 10, 0, 0, 1]); // ::ffff:10.0.0.1
        rec.extend_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
        rec.extend_from_slice(&5201u16.to_ne_bytes());
        rec.extend_from_slice(&40000u16.to_ne_bytes());
        rec.extend_from_slice(&1u32.to_ne_bytes());
        rec.extend_from_slice(&info.to_bytes());
        assert_eq!(rec.len(), RECORD_BYTES);
        let two = [rec.clone(), rec.clone()].concat();
        let flows = parse_flow_records("bpf_gemini", &two).unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0].local, "10.0.0.1:5201".parse().unwrap());
        assert_eq!(flows[0].remote, "[fd00::2]:40000".parse().unwrap());
        assert_eq!(flows[0].info, info);
        let st = crate::sockdiag::CcState::decode("bpf_gemini", &flows[0].info).unwrap();
        assert_eq!(st.summary(), "base_rtt=20us rtt_min=7us alpha=0.125 f=1.000 rto=2 rec=3 idle=5");
        assert!(st.ecn_ok && !st.ce_state && st.idle_restarts == 5);
        assert!(parse_flow_records("bpf_gemini", &two[..RECORD_BYTES + 3]).is_err(), "torn read");
        rec[40] = 9;
        assert!(parse_flow_records("bpf_gemini", &rec).unwrap_err().to_string().contains("version"));
    }

    #[test]
    #[cfg_attr(xdcc_no_bpf, ignore = "built without BPF objects (XDCC_NO_BPF)")]
    fn embedded_objects_are_bpf_elf_files() {
        for (cc, b) in OBJECTS {
            assert_eq!(&b[..4], b"\x7fELF", "{cc}");
            assert_eq!(u16::from_le_bytes([b[18], b[19]]), 247, "{cc}: e_machine is not EM_BPF");
        }
    }

    #[test]
    fn default_config_round_trips_and_tunables_follow_the_module_rules() {
        let b = default_config("uno");
        let c = linux::Config::<uno::Params>::read_bytes(&b).unwrap();
        assert_eq!(c, linux::Config::for_net(&NetConfig::LINUX_DEFAULT));
        let k = apply(&c, "k_bytes", 30_000).unwrap();
        assert_eq!(k.params.k_bytes, 30_000);
        assert!(apply(&c, "qa_beta_q16", 10_000_000).unwrap_err().to_string().contains("qa_beta_q16"));
        assert!(apply(&c, "window_pacing_pct", 1001).is_err());
        assert_eq!(apply(&c, "window_pacing_ss_pct", 300).unwrap().pacing.ss_pct, 300);
        let n = apply(&c, "net_link_rate_mbps", 1000).unwrap();
        assert_eq!(n.params, uno::Params::from_net(&NetConfig { link_rate_bps: 1_000_000_000, ..NetConfig::LINUX_DEFAULT }));
        assert!(apply(&c, "net_inter_rtt_us", 10).is_err(), "inter < intra");
        assert!(apply(&c, "nope", 1).is_err());
    }

    #[test]
    fn a_corrupt_config_is_refused() {
        let mut b = default_config("gemini");
        let at = std::mem::offset_of!(linux::Config<gemini::Params>, pacing);
        assert!(linux::Config::<gemini::Params>::read_bytes(&b).is_some());
        b[at..at + 4].copy_from_slice(&5000u32.to_ne_bytes());
        assert!(linux::Config::<gemini::Params>::read_bytes(&b).is_none(), "a 5000 % pacing ratio was accepted");
    }
}

// ------------------------------------------------------------------- trace

/// One ACK as the per-ACK trace saw it (`struct xdcc_trace_rec`, shim.c).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceRecord {
    /// The kernel's TCP clock, µs.
    pub t_us: u64,
    pub local_port: u16,
    pub remote_port: u16,
    /// The ACK's RTT sample, µs (none: the ACK had no sample).
    pub rtt_us: Option<u32>,
    pub srtt_us: u32,
    pub acked_pkts: u32,
    pub in_flight_pkts: u32,
    pub ece: bool,
    pub app_limited: bool,
    pub cwnd_limited: bool,
    pub ca_state: u8,
    pub cwnd_before: u32,
    pub cwnd_after: u32,
    pub ssthresh: u32,
    pub pacing_rate_bps: u64,
    /// Records this CPU could not write before this one (the ring was full).
    #[serde(skip)]
    pub dropped_before: u32,
}

const TRACE_BYTES: usize = 56;

/// Decodes one trace record of `algo`.
pub fn parse_trace_record(algo: &str, r: &[u8]) -> Result<TraceRecord> {
    if r.len() < TRACE_BYTES {
        bail!("bpf_{algo}: trace record of {} bytes, expected {TRACE_BYTES}", r.len());
    }
    let u64_at = |o: usize| u64::from_ne_bytes(r[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().expect("4 bytes"));
    let u16_at = |o: usize| u16::from_ne_bytes(r[o..o + 2].try_into().expect("2 bytes"));
    let rtt = u32_at(24) as i32;
    Ok(TraceRecord {
        t_us: u64_at(0),
        pacing_rate_bps: u64_at(8).saturating_mul(8),
        dropped_before: u32_at(16),
        local_port: u16_at(20),
        remote_port: u16_at(22),
        rtt_us: (rtt >= 0).then_some(rtt as u32),
        srtt_us: u32_at(28),
        acked_pkts: u32_at(32),
        in_flight_pkts: u32_at(36),
        cwnd_before: u32_at(40),
        cwnd_after: u32_at(44),
        ssthresh: u32_at(48),
        ece: r[52] != 0,
        app_limited: r[53] != 0,
        cwnd_limited: r[54] != 0,
        ca_state: r[55],
    })
}

/// What a trace saw: records written, and records the kernel could not
/// write because the ring was full.
#[derive(Debug, Default, Serialize)]
pub struct TraceSummary {
    pub records: u64,
    pub dropped: u64,
}

/// Traces every ACK of `bpf_<cc>` (of the flows with a port in `ports`,
/// all if empty) until `stop` is set, handing each record to `out`.
/// Tracing is switched on for the CC while this runs and off when it returns.
pub fn trace(
    cc: &str,
    ports: &[u16],
    stop: &std::sync::atomic::AtomicBool,
    mut out: impl FnMut(&TraceRecord),
) -> Result<TraceSummary> {
    use std::{cell::RefCell, sync::atomic::Ordering, time::Duration};
    let algo = algo_name(cc)?;
    if !is_loaded(algo) {
        bail!(bad_value(format!("bpf_{algo} is not loaded by xdcc (xdcc cc load {algo} --bpf)")));
    }
    let dir = pin_dir(algo);
    let open = |pin: &str| {
        MapHandle::from_pinned_path(dir.join(pin)).with_context(|| {
            format!("opening {} (bpf_{algo} loaded by an older xdcc? reload it: xdcc cc load {algo} --bpf --replace)", dir.join(pin).display())
        })
    };
    let (ring, on) = (open("trace")?, open("trace_on")?);
    let summary = RefCell::new(TraceSummary::default());
    let first_error = RefCell::new(None);
    let mut builder = libbpf_rs::RingBufferBuilder::new();
    builder
        .add(&ring, |bytes: &[u8]| {
            match parse_trace_record(algo, bytes) {
                Ok(r) => {
                    let mut s = summary.borrow_mut();
                    s.dropped += r.dropped_before as u64;
                    if ports.is_empty() || ports.contains(&r.local_port) || ports.contains(&r.remote_port) {
                        s.records += 1;
                        out(&r);
                    }
                }
                Err(e) => {
                    first_error.borrow_mut().get_or_insert(e);
                }
            }
            0
        })
        .context("reading the trace ring buffer")?;
    let rb = builder.build().context("reading the trace ring buffer")?;
    /// Switches tracing off however the loop ends.
    struct Off<'a>(&'a MapHandle);
    impl Drop for Off<'_> {
        fn drop(&mut self) {
            let _ = self.0.update(&0u32.to_ne_bytes(), &0u32.to_ne_bytes(), MapFlags::ANY);
        }
    }
    on.update(&0u32.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY).context("switching the trace on")?;
    let off = Off(&on);
    while !stop.load(Ordering::Relaxed) {
        rb.poll(Duration::from_millis(100)).context("polling the trace")?;
        if first_error.borrow().is_some() {
            break;
        }
    }
    drop(off);
    rb.consume().context("reading the last trace records")?;
    drop(rb); // (it holds the callback, which borrows the summary)
    if let Some(e) = first_error.into_inner() {
        return Err(e);
    }
    Ok(summary.into_inner())
}


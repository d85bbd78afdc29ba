//! The kernel side the CLI talks to directly: congestion-control selection
//! (sysctl, optionally inside a network namespace) and the xdcc kernel
//! modules (finit_module / delete_module). Their tunables, and the BPF CCs',
//! are one layer up ([`crate::tunables`]).

use std::{
    ffi::CString,
    fs,
    io::ErrorKind,
    path::{Path, PathBuf},
};

use crate::failure::{bad_value, kernel_refused};
use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use xdcc_algo::CCS;

const AVAILABLE: &str = "net/ipv4/tcp_available_congestion_control";
const ALLOWED: &str = "net/ipv4/tcp_allowed_congestion_control";
pub const DEFAULT_CC: &str = "net/ipv4/tcp_congestion_control";

/// The xdcc congestion controls (the algorithm crate's one list): sysctl
/// directory name = CC name, module.
pub(crate) fn xdcc_ccs() -> impl Iterator<Item = (&'static str, &'static str)> {
    CCS.iter().map(|c| (c.name, c.module))
}

/// Root of the sysctl tree: /proc/sys, or $XDCC_SYSCTL_ROOT (tests point it
/// at a scratch copy).
pub fn sysctl_root() -> PathBuf {
    std::env::var_os("XDCC_SYSCTL_ROOT").map(PathBuf::from).unwrap_or_else(|| "/proc/sys".into())
}

pub fn read_sysctl(rel: &str) -> Result<String> {
    let p = sysctl_root().join(rel);
    Ok(fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?.trim().to_string())
}

fn netns_path(ns: &str) -> PathBuf {
    if ns.contains('/') {
        PathBuf::from(ns)
    } else {
        Path::new("/run/netns").join(ns)
    }
}

/// Moves the calling thread (the whole process, if called before any other
/// thread starts) into network namespace `ns` (a name under /run/netns or a
/// path): the global `-n/--netns`.
pub fn enter_netns(ns: &str) -> Result<()> {
    let path = netns_path(ns);
    let file = fs::File::open(&path).map_err(|e| {
        bad_value(format!("network namespace {ns}: {e} ({}; create it with `ip netns add {ns}`)", path.display()))
    })?;
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| kernel_refused(format!("entering network namespace {}: {e}", path.display())))
}

/// Runs `f` with the calling thread inside network namespace `ns`, then
/// returns the thread to the namespace it was in. (Sockets opened by `f`
/// stay in `ns`: a socket belongs to the namespace it was created in.)
pub fn inside_netns<T>(ns: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let home = fs::File::open("/proc/thread-self/ns/net").context("opening this thread's network namespace")?;
    enter_netns(ns)?;
    let r = f();
    nix::sched::setns(&home, nix::sched::CloneFlags::CLONE_NEWNET).context("returning to the original network namespace")?;
    r
}

#[derive(Debug, Serialize)]
pub struct CcList {
    pub default: String,
    pub available: Vec<String>,
    pub allowed: Vec<String>,
    /// xdcc CCs whose module is not loaded.
    pub xdcc_not_loaded: Vec<String>,
}

/// The CCs of the current network namespace (`-n` moves the process there).
pub fn cc_list() -> Result<CcList> {
    let available: Vec<String> = read_sysctl(AVAILABLE)?.split_whitespace().map(String::from).collect();
    let allowed = read_sysctl(ALLOWED)?.split_whitespace().map(String::from).collect();
    let xdcc_not_loaded =
        xdcc_ccs().filter(|(cc, _)| !available.iter().any(|a| a == cc)).map(|(cc, _)| cc.to_string()).collect();
    Ok(CcList { default: read_sysctl(DEFAULT_CC)?, available, allowed, xdcc_not_loaded })
}

/// Sets the default CC for new sockets of the current network namespace.
/// Refuses names the kernel does not have, with the list and, for xdcc CCs,
/// the module to load.
pub fn cc_set(name: &str) -> Result<()> {
    let available: Vec<String> = read_sysctl(AVAILABLE)?.split_whitespace().map(String::from).collect();
    if !available.iter().any(|a| a == name) {
        let hint = xdcc_ccs()
            .find(|(cc, _)| *cc == name)
            .map(|(_, m)| format!("; load it first: xdcc module load {m}"))
            .or_else(|| {
                name.strip_prefix("bpf_")
                    .filter(|b| xdcc_ccs().any(|(cc, _)| cc == *b))
                    .map(|b| format!("; load it first: xdcc cc load {b} --bpf"))
            })
            .unwrap_or_default();
        return Err(bad_value(format!(
            "congestion control `{name}` is not available (available: {}){hint}",
            available.join(" ")
        )));
    }
    let p = sysctl_root().join(DEFAULT_CC);
    fs::write(&p, name).map_err(|e| match e.kind() {
        ErrorKind::PermissionDenied => kernel_refused(format!(
            "the kernel refused `{name}` as the default of this namespace: it is not in \
             tcp_allowed_congestion_control (set it in the initial namespace first, or add it to \
             net.ipv4.tcp_allowed_congestion_control)"
        )),
        _ => anyhow!("writing {}: {e}", p.display()),
    })
}

/// Lets network namespaces other than the initial one make each of `names`
/// their default (Linux marks the CCs of tcp_allowed_congestion_control
/// non-restricted; xdcc's modules and BPF CCs are so already, cubic and
/// reno too, bbr not). Refuses, changing nothing, a name the kernel does
/// not have. Returns the allowed list as it stands after.
pub fn cc_allow(names: &[String]) -> Result<Vec<String>> {
    let available: Vec<String> = read_sysctl(AVAILABLE)?.split_whitespace().map(String::from).collect();
    if let Some(n) = names.iter().find(|n| !available.contains(n)) {
        return Err(bad_value(format!("congestion control `{n}` is not available (available: {})", available.join(" "))));
    }
    let mut allowed: Vec<String> = read_sysctl(ALLOWED)?.split_whitespace().map(String::from).collect();
    if names.iter().all(|n| allowed.contains(n)) {
        return Ok(allowed);
    }
    allowed.extend(names.iter().filter(|n| !allowed.contains(n)).cloned().collect::<Vec<_>>());
    let p = sysctl_root().join(ALLOWED);
    fs::write(&p, allowed.join(" ")).map_err(|e| match e.kind() {
        ErrorKind::PermissionDenied => kernel_refused(format!("writing {}: permission denied (root, in the initial network namespace)", p.display())),
        _ => anyhow!("writing {}: {e}", p.display()),
    })?;
    Ok(allowed)
}

// ---------------------------------------------------------------- modules

#[derive(Debug, Serialize)]
pub struct ModuleInfo {
    pub name: String,
    pub cc: String,
    pub loaded: bool,
    /// Users (sockets or namespaces holding the CC) as /proc/modules counts them.
    pub refcount: Option<u32>,
    /// Where `module load` would find it.
    pub file: Option<String>,
}

/// Where module files are looked for: $XDCC_MODULE_DIR, else `kmods/` next
/// to the current directory.
pub fn module_dir() -> PathBuf {
    std::env::var_os("XDCC_MODULE_DIR").map(PathBuf::from).unwrap_or_else(|| "kmods".into())
}

fn loaded_modules() -> Vec<(String, u32)> {
    fs::read_to_string("/proc/modules")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let name = f.next()?.to_string();
            let _size = f.next();
            let refs = f.next()?.parse().ok()?;
            Some((name, refs))
        })
        .collect()
}

pub fn module_list() -> Vec<ModuleInfo> {
    let loaded = loaded_modules();
    xdcc_ccs()
        .map(|(cc, m)| {
            let l = loaded.iter().find(|(n, _)| n == m);
            let file = module_dir().join(format!("{m}.ko"));
            ModuleInfo {
                name: m.to_string(),
                cc: cc.to_string(),
                loaded: l.is_some(),
                refcount: l.map(|(_, r)| *r),
                file: file.is_file().then(|| file.display().to_string()),
            }
        })
        .collect()
}

/// Loads a module by name (`tcp_uno`, `uno`) from the module directory, or
/// by path to a `.ko` file.
pub fn module_load(what: &str) -> Result<String> {
    let path = if what.ends_with(".ko") || what.contains('/') {
        PathBuf::from(what)
    } else {
        let m = xdcc_ccs()
            .find(|(cc, m)| *cc == what || *m == what)
            .map(|(_, m)| m)
            .ok_or_else(|| bad_value(format!("unknown module `{what}` (xdcc modules: {})", module_names())))?;
        module_dir().join(format!("{m}.ko"))
    };
    let file = fs::File::open(&path).map_err(|e| {
        anyhow!("module file {}: {e} (build it with testbed/kernel/build.sh, or set XDCC_MODULE_DIR)", path.display())
    })?;
    let params = CString::new("").expect("no NUL");
    nix::kmod::finit_module(&file, &params, nix::kmod::ModuleInitFlags::empty()).map_err(|e| kernel_refused(match e {
        nix::errno::Errno::EEXIST => anyhow!("{} is already loaded", path.display()),
        nix::errno::Errno::ENOSYS => anyhow!("this kernel cannot load modules (CONFIG_MODULES is off)"),
        nix::errno::Errno::EPERM => anyhow!("not permitted to load modules (root needed; or modules are disabled)"),
        nix::errno::Errno::ENOEXEC => anyhow!("{} is not a module for this kernel", path.display()),
        e => anyhow!("loading {}: {e}", path.display()),
    }))?;
    Ok(path.display().to_string())
}

pub fn module_unload(what: &str) -> Result<()> {
    let m = xdcc_ccs()
        .find(|(cc, m)| *cc == what || *m == what)
        .map(|(_, m)| m)
        .ok_or_else(|| bad_value(format!("unknown module `{what}` (xdcc modules: {})", module_names())))?;
    let name = CString::new(m).expect("no NUL");
    nix::kmod::delete_module(&name, nix::kmod::DeleteModuleFlags::O_NONBLOCK).map_err(|e| kernel_refused(match e {
        nix::errno::Errno::ENOENT => anyhow!("{m} is not loaded"),
        nix::errno::Errno::EBUSY | nix::errno::Errno::EAGAIN => anyhow!(
            "{m} is in use: a socket or a namespace's default congestion control still uses it \
             (close the sockets and reset net.ipv4.tcp_congestion_control first)"
        ),
        nix::errno::Errno::ENOSYS => anyhow!("this kernel cannot unload modules"),
        e => anyhow!("unloading {m}: {e}"),
    }))
}

fn module_names() -> String {
    xdcc_ccs().map(|(_, m)| m).collect::<Vec<_>>().join(", ")
}

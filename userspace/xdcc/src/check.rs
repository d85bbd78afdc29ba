//! `xdcc check`: a preflight of this host — what the kernel offers the two
//! backends of xdcc's CCs (BPF struct_ops `bpf_<cc>`, kernel modules
//! `tcp_<cc>`) and the agent, which CCs can load here and with which backend,
//! what is missing and how to get it.
//!
//! Two steps: [`gather`] reads the facts from a root directory (`/`, or a
//! copied tree in tests: every path is under it) and [`evaluate`] turns them
//! into the report, a pure function the unit tests drive with made-up facts.
//! What each check means:
//! - **BTF** `/sys/kernel/btf/vmlinux`: the BPF CCs' loader resolves the
//!   kernel's `tcp_congestion_ops` through it (CONFIG_DEBUG_INFO_BTF).
//! - **struct_ops TCP CCs**: the kernel's BTF has
//!   `bpf_struct_ops_tcp_congestion_ops`, the type libbpf and aya look up to
//!   register a CC written in BPF (Linux ≥ 5.6, CONFIG_BPF_JIT).
//! - **struct_ops links**: `bpf_struct_ops_link` (Linux ≥ 6.4): a BPF CC held
//!   by a pinned link, replaceable in place (`cc load --replace`).
//! - **bpffs** at `/sys/fs/bpf`: where the CCs' links and tunables are pinned.
//! - **cgroup v2**: the agent's socket programs attach to a cgroup2 tree.
//! - **tcp_ecn**: 1 requests ECN on outgoing connections; 2 (the default)
//!   only accepts it. UnoCC, Gemini, SMaRTT, AMRT and DCTCP need ECN: with a
//!   BPF or module CC that needs ECN Linux negotiates it whatever this says
//!   (`TCP_CONG_NEEDS_ECN`), so this is informational.
//! - **modules**: `/proc/modules` (CONFIG_MODULES), `modules_disabled`, the
//!   signature policy (`sig_enforce`, lockdown): an unsigned `tcp_<cc>.ko`
//!   loads only where neither enforces signatures.
//! - per CC: `bpf_<cc>` needs BTF and struct_ops; `tcp_<cc>` needs module
//!   loading and `tcp_<cc>.ko` in the module directory `xdcc module load`
//!   reads (`$XDCC_MODULE_DIR`, else `kmods/`) built for this kernel (its
//!   `vermagic`), or the module already loaded.

use std::path::Path;

use serde::Serialize;

/// What the system says (`gather`), before any judgement.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    pub kernel_release: String,
    pub euid_root: bool,
    pub btf: bool,
    /// `None`: no BTF to look in, or it did not parse.
    pub btf_tcp_struct_ops: Option<bool>,
    pub btf_struct_ops_link: Option<bool>,
    pub bpffs: bool,
    /// Mount point of a cgroup2 file system, if any.
    pub cgroup2: Option<String>,
    pub tcp_ecn: Option<u32>,
    pub modules: bool,
    pub modules_disabled: Option<bool>,
    pub sig_enforce: Option<bool>,
    /// The active lockdown mode (`none`, `integrity`, `confidentiality`).
    pub lockdown: Option<String>,
    /// `net.ipv4.tcp_available_congestion_control`.
    pub available: Vec<String>,
    /// xdcc module files (`tcp_<cc>.ko`) in the module directory.
    pub module_files: Vec<ModuleFile>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ModuleFile {
    pub module: String,
    pub path: String,
    /// The kernel release of its `vermagic` (None: not found in the file).
    pub built_for: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// What was found.
    pub found: String,
    /// What it means when not ok, and how to get it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Backend {
    pub ok: bool,
    /// Why not, or the state ("registered", "loadable").
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CcSupport {
    pub cc: &'static str,
    pub bpf: Backend,
    pub module: Backend,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub kernel: String,
    pub checks: Vec<Check>,
    pub ccs: Vec<CcSupport>,
    /// Every xdcc CC can be used here with at least one backend.
    pub ready: bool,
}

/// Reads the facts under `root` (`/` on a real system); module files from
/// `module_dir` (as `xdcc module load` finds them).
pub fn gather(root: &Path, module_dir: &Path) -> Facts {
    let read = |p: &str| std::fs::read_to_string(root.join(p.trim_start_matches('/'))).ok();
    let exists = |p: &str| root.join(p.trim_start_matches('/')).exists();
    let kernel_release = read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default();
    let btf_path = root.join("sys/kernel/btf/vmlinux");
    let btf = btf_path.exists();
    let (btf_tcp_struct_ops, btf_struct_ops_link) = match aya::Btf::parse_file(&btf_path, aya::Endianness::default()) {
        Ok(b) if btf => {
            let has = |name: &str| b.id_by_type_name_kind(name, aya_obj::btf::BtfKind::Struct).is_ok();
            (Some(has("bpf_struct_ops_tcp_congestion_ops")), Some(has("bpf_struct_ops_link")))
        }
        _ => (None, None),
    };
    let mounts = read("/proc/mounts").unwrap_or_default();
    let mount_of = |fstype: &str| {
        mounts.lines().find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() > 2 && w[2] == fstype).then(|| w[1].to_string())
        })
    };
    let bpffs = mounts.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() > 2 && w[1] == "/sys/fs/bpf" && w[2] == "bpf"
    });
    let flag = |p: &str| read(p).map(|s| matches!(s.trim(), "1" | "Y" | "y"));
    let lockdown = read("/sys/kernel/security/lockdown")
        .and_then(|s| s.split_whitespace().find(|w| w.starts_with('[')).map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string()));
    let available = read("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let module_files = xdcc_algo::CCS
        .iter()
        .filter_map(|c| {
            let path = module_dir.join(format!("{}.ko", c.module));
            let bytes = std::fs::read(&path).ok()?;
            Some(ModuleFile { module: c.module.to_string(), path: path.display().to_string(), built_for: vermagic_release(&bytes) })
        })
        .collect();
    Facts {
        kernel_release,
        euid_root: nix::unistd::geteuid().is_root(),
        btf,
        btf_tcp_struct_ops,
        btf_struct_ops_link,
        bpffs,
        cgroup2: mount_of("cgroup2"),
        tcp_ecn: read("/proc/sys/net/ipv4/tcp_ecn").and_then(|s| s.trim().parse().ok()),
        modules: exists("/proc/modules"),
        modules_disabled: flag("/proc/sys/kernel/modules_disabled"),
        sig_enforce: flag("/sys/module/module/parameters/sig_enforce"),
        lockdown,
        available,
        module_files,
    }
}

/// The kernel release a module was built for: the first word of its
/// `vermagic=` string (`.modinfo`).
fn vermagic_release(ko: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"vermagic=";
    let at = ko.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &ko[at..];
    let end = rest.iter().position(|&b| b == b' ' || b == 0)?;
    std::str::from_utf8(&rest[..end]).ok().map(String::from)
}

/// Judges the facts: the checks, each CC's backends, and whether xdcc can run.
pub fn evaluate(f: &Facts) -> Report {
    let mut checks = Vec::new();
    let mut add = |name, ok, found: String, fix: &str| {
        checks.push(Check { name, ok, found, fix: (!ok).then(|| fix.to_string()) });
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    add("root", f.euid_root, yes_no(f.euid_root), "loading CCs, writing tunables and the agent need root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN)");
    add(
        "BTF",
        f.btf,
        if f.btf { "/sys/kernel/btf/vmlinux".into() } else { "no /sys/kernel/btf/vmlinux".into() },
        "the BPF CCs need the kernel's BTF: a kernel built with CONFIG_DEBUG_INFO_BTF=y (every major distribution's)",
    );
    let so = f.btf_tcp_struct_ops == Some(true);
    add(
        "struct_ops TCP CCs",
        so,
        match f.btf_tcp_struct_ops {
            Some(true) => "bpf_struct_ops_tcp_congestion_ops in BTF".into(),
            Some(false) => "no bpf_struct_ops_tcp_congestion_ops in BTF".into(),
            None => "unknown (no BTF)".into(),
        },
        "TCP congestion controls in BPF need Linux >= 5.6 with CONFIG_BPF_JIT and CONFIG_BPF_SYSCALL",
    );
    let links = f.btf_struct_ops_link == Some(true);
    add(
        "struct_ops links",
        links,
        match f.btf_struct_ops_link {
            Some(true) => "bpf_struct_ops_link in BTF".into(),
            Some(false) => "no bpf_struct_ops_link in BTF".into(),
            None => "unknown (no BTF)".into(),
        },
        "xdcc pins each BPF CC by a struct_ops link (Linux >= 6.4)",
    );
    add(
        "bpffs",
        f.bpffs,
        if f.bpffs { "mounted at /sys/fs/bpf".into() } else { "not mounted at /sys/fs/bpf".into() },
        "mount it: mount -t bpf bpf /sys/fs/bpf (systemd does at boot); xdcc mounts it when it can",
    );
    add(
        "cgroup v2",
        f.cgroup2.is_some(),
        f.cgroup2.clone().map_or_else(|| "no cgroup2 mount".into(), |m| format!("mounted at {m}")),
        "the agent's socket programs attach to a cgroup2 tree: mount -t cgroup2 none /sys/fs/cgroup",
    );
    add(
        "tcp_ecn",
        true,
        match f.tcp_ecn {
            Some(0) => "0 (ECN off; CCs that need ECN still negotiate it)".into(),
            Some(1) => "1 (ECN requested and accepted)".into(),
            Some(2) => "2 (ECN accepted when requested; CCs that need ECN request it)".into(),
            Some(v) => format!("{v}"),
            None => "unknown".into(),
        },
        "",
    );
    let module_policy = module_policy(f);
    add(
        "kernel modules",
        module_policy.is_ok(),
        match &module_policy {
            Ok(()) => "loadable (no signature enforcement)".into(),
            Err(why) => why.clone(),
        },
        "the modules backend needs CONFIG_MODULES, modules_disabled = 0 and, for xdcc's unsigned modules, no enforced signatures (sig_enforce, lockdown): use the BPF CCs",
    );

    let bpf_ok = f.btf && so && links && f.bpffs;
    let ccs: Vec<CcSupport> = xdcc_algo::CCS
        .iter()
        .map(|c| {
            let bpf_name = format!("bpf_{}", c.name);
            let bpf = if f.available.contains(&bpf_name) {
                Backend { ok: true, why: format!("{bpf_name} registered") }
            } else if bpf_ok {
                Backend { ok: true, why: format!("xdcc cc load {} --bpf", c.name) }
            } else {
                let missing: Vec<&str> = [("BTF", f.btf), ("struct_ops TCP CCs", so), ("struct_ops links", links), ("bpffs", f.bpffs)]
                    .iter()
                    .filter(|(_, ok)| !ok)
                    .map(|(n, _)| *n)
                    .collect();
                Backend { ok: false, why: format!("needs {}", missing.join(", ")) }
            };
            let loaded = f.available.iter().any(|a| a == c.name);
            let module = if loaded {
                Backend { ok: true, why: format!("{} registered", c.name) }
            } else if let Err(why) = &module_policy {
                Backend { ok: false, why: why.clone() }
            } else {
                match f.module_files.iter().find(|m| m.module == c.module) {
                    Some(m) if m.built_for.as_deref().is_none_or(|r| r == f.kernel_release) => {
                        Backend { ok: true, why: format!("xdcc module load {}", c.module) }
                    }
                    Some(m) => Backend {
                        ok: false,
                        why: format!("{} is built for {}, not {}", m.path, m.built_for.as_deref().unwrap_or("?"), f.kernel_release),
                    },
                    None => Backend {
                        ok: false,
                        why: format!("no {}.ko (XDCC_MODULE_DIR or kmods/; build it against this kernel)", c.module),
                    },
                }
            };
            CcSupport { cc: c.name, bpf, module }
        })
        .collect();
    let ready = f.euid_root && ccs.iter().all(|c| c.bpf.ok || c.module.ok);
    Report { kernel: f.kernel_release.clone(), checks, ccs, ready }
}

/// Whether this kernel loads an unsigned module, or why not.
fn module_policy(f: &Facts) -> Result<(), String> {
    if !f.modules {
        return Err("no module support (no /proc/modules: CONFIG_MODULES is off)".into());
    }
    if f.modules_disabled == Some(true) {
        return Err("module loading disabled (kernel.modules_disabled = 1)".into());
    }
    if f.sig_enforce == Some(true) {
        return Err("module signatures enforced (sig_enforce): xdcc's modules are unsigned".into());
    }
    match f.lockdown.as_deref() {
        Some("integrity") | Some("confidentiality") => {
            Err(format!("kernel lockdown ({}) refuses unsigned modules", f.lockdown.as_deref().unwrap_or("")))
        }
        _ => Ok(()),
    }
}

/// The report for people.
pub fn print(r: &Report) {
    println!("kernel {}", r.kernel);
    for c in &r.checks {
        println!("{} {:<20} {}", if c.ok { "ok  " } else { "MISS" }, c.name, c.found);
        if let Some(fix) = &c.fix {
            println!("     {:<20} -> {fix}", "");
        }
    }
    println!();
    let show = |b: &Backend| format!("{} {}", if b.ok { "yes" } else { "no " }, b.why);
    let w = r.ccs.iter().map(|c| show(&c.bpf).chars().count()).max().unwrap_or(0).max(3);
    println!("{:<8} {:<w$}  module", "cc", "bpf");
    for c in &r.ccs {
        println!("{:<8} {:<w$}  {}", c.cc, show(&c.bpf), show(&c.module));
    }
    println!();
    if r.ready {
        println!("ready: every xdcc CC can run here");
    } else {
        println!("not ready: see MISS and \"no\" above");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This host's kind of kernel: BTF and struct_ops, no modules.
    fn bpf_host() -> Facts {
        Facts {
            kernel_release: "6.18.0".into(),
            euid_root: true,
            btf: true,
            btf_tcp_struct_ops: Some(true),
            btf_struct_ops_link: Some(true),
            bpffs: true,
            cgroup2: Some("/sys/fs/cgroup".into()),
            tcp_ecn: Some(2),
            modules: false,
            ..Facts::default()
        }
    }

    /// The test VM's kind: modules built for it, no BTF.
    fn module_host() -> Facts {
        Facts {
            kernel_release: "6.12.0-xdcc".into(),
            euid_root: true,
            modules: true,
            modules_disabled: Some(false),
            tcp_ecn: Some(1),
            module_files: xdcc_algo::CCS
                .iter()
                .map(|c| ModuleFile { module: c.module.into(), path: format!("kmods/{}.ko", c.module), built_for: Some("6.12.0-xdcc".into()) })
                .collect(),
            ..Facts::default()
        }
    }

    fn check<'a>(r: &'a Report, name: &str) -> &'a Check {
        r.checks.iter().find(|c| c.name == name).unwrap()
    }

    #[test]
    fn a_btf_kernel_without_modules_runs_every_cc_as_bpf() {
        let r = evaluate(&bpf_host());
        assert!(r.ready);
        assert!(r.ccs.iter().all(|c| c.bpf.ok && !c.module.ok), "{:?}", r.ccs);
        assert!(r.ccs[0].module.why.contains("CONFIG_MODULES"));
        assert!(!check(&r, "kernel modules").ok);
        assert!(check(&r, "BTF").fix.is_none());
    }

    #[test]
    fn a_kernel_without_btf_runs_the_modules_and_says_what_bpf_needs() {
        let r = evaluate(&module_host());
        assert!(r.ready);
        for c in &r.ccs {
            assert!(c.module.ok && !c.bpf.ok, "{c:?}");
            assert!(c.bpf.why.contains("BTF") && c.bpf.why.contains("bpffs"), "{}", c.bpf.why);
        }
        let btf = check(&r, "BTF");
        assert!(!btf.ok && btf.fix.as_deref().unwrap().contains("CONFIG_DEBUG_INFO_BTF"));
        assert_eq!(check(&r, "struct_ops TCP CCs").found, "unknown (no BTF)");
    }

    #[test]
    fn a_module_missing_or_built_for_another_kernel_is_named() {
        let mut f = module_host();
        f.module_files.retain(|m| m.module != "tcp_uno");
        f.module_files[0].built_for = Some("6.1.0".into());
        let r = evaluate(&f);
        assert!(!r.ready, "UnoCC has no backend");
        let uno = r.ccs.iter().find(|c| c.cc == "uno").unwrap();
        assert!(uno.module.why.contains("no tcp_uno.ko"), "{}", uno.module.why);
        let other = r.ccs.iter().find(|c| c.cc != "uno" && !c.module.ok).unwrap();
        assert!(other.module.why.contains("is built for 6.1.0, not 6.12.0-xdcc"), "{}", other.module.why);
        // A module already loaded counts whatever the files say.
        let other = other.cc.to_string();
        f.available = vec!["uno".into(), other];
        assert!(evaluate(&f).ready);
    }

    #[test]
    fn signature_enforcement_lockdown_or_disabled_loading_stop_the_modules() {
        for (tweak, want) in [
            (&(|f: &mut Facts| f.sig_enforce = Some(true)) as &dyn Fn(&mut Facts), "sig_enforce"),
            (&|f: &mut Facts| f.lockdown = Some("integrity".into()), "lockdown (integrity)"),
            (&|f: &mut Facts| f.modules_disabled = Some(true), "modules_disabled = 1"),
        ] {
            let mut f = module_host();
            tweak(&mut f);
            let r = evaluate(&f);
            assert!(!r.ready);
            assert!(r.ccs.iter().all(|c| !c.module.ok && c.module.why.contains(want)), "{want}: {:?}", r.ccs[0]);
        }
        let mut f = module_host();
        f.lockdown = Some("none".into());
        assert!(evaluate(&f).ready);
    }

    #[test]
    fn a_kernel_without_struct_ops_links_is_not_enough_for_bpf() {
        let mut f = bpf_host();
        f.btf_struct_ops_link = Some(false);
        let r = evaluate(&f);
        assert!(!r.ready);
        assert!(r.ccs.iter().all(|c| !c.bpf.ok && c.bpf.why == "needs struct_ops links"), "{:?}", r.ccs[0]);
        // ... unless the CC is already registered (by another xdcc).
        f.available = xdcc_algo::CCS.iter().map(|c| format!("bpf_{}", c.name)).collect();
        assert!(evaluate(&f).ready);
    }

    #[test]
    fn not_root_is_not_ready() {
        let mut f = bpf_host();
        f.euid_root = false;
        let r = evaluate(&f);
        assert!(!r.ready && !check(&r, "root").ok);
    }

    #[test]
    fn gather_reads_a_tree() {
        let d = std::env::temp_dir().join(format!("xdcc-check-test-{}", std::process::id()));
        let w = |p: &str, s: &str| {
            let p = d.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w("proc/sys/kernel/osrelease", "6.12.0-xdcc\n");
        w("proc/modules", "");
        w("proc/sys/kernel/modules_disabled", "0\n");
        w("sys/kernel/security/lockdown", "[none] integrity confidentiality\n");
        w("proc/sys/net/ipv4/tcp_ecn", "1\n");
        w("proc/sys/net/ipv4/tcp_available_congestion_control", "reno cubic uno\n");
        w("proc/mounts", "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\nbpf /sys/fs/bpf bpf rw 0 0\n");
        w("kmods/tcp_uno.ko", "\x7fELF...\0license=GPL\0vermagic=6.12.0-xdcc SMP mod_unload \0name=tcp_uno\0");
        w("kmods/tcp_dctcp.ko", "no modinfo here");
        let f = gather(&d, &d.join("kmods"));
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(f.kernel_release, "6.12.0-xdcc");
        assert!(f.modules && f.modules_disabled == Some(false) && f.lockdown.as_deref() == Some("none"));
        assert!(!f.btf && f.btf_tcp_struct_ops.is_none());
        assert_eq!((f.bpffs, f.cgroup2.as_deref(), f.tcp_ecn), (true, Some("/sys/fs/cgroup/unified"), Some(1)));
        assert_eq!(f.available, ["reno", "cubic", "uno"]);
        let m: Vec<_> = f.module_files.iter().map(|m| (m.module.as_str(), m.built_for.as_deref())).collect();
        assert_eq!(m, [("tcp_uno", Some("6.12.0-xdcc")), ("tcp_dctcp", None)]);
    }
}

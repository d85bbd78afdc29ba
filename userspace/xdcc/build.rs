//! Builds the eBPF programs (`ebpf/programs`, target bpfel-unknown-none) and
//! the BPF struct_ops congestion controls (`kmods/bpf/build.sh`: bpf_uno,
//! bpf_gemini, bpf_oscar, bpf_smartt) so the agent can embed the objects.
//!
//! Needs Debian's rustc-web (`/usr/bin/rustc`, with the prebuilt BPF libcore)
//! and bpf-linker: `ebpf/install-toolchain.sh` installs both and prints
//! bpf-linker's directory. bpf-linker is looked up in $XDCC_BPF_LINKER_DIR,
//! then on PATH, then in the install script's cache. `XDCC_EBPF_OBJECT=path`
//! uses a prebuilt object instead; `XDCC_BPF_CC_DIR=dir` prebuilt
//! `bpf_<cc>.o` files. The struct_ops build reads the build machine's kernel
//! BTF (/sys/kernel/btf/vmlinux) for the type layouts; CO-RE relocations let
//! the objects load on other kernels.
use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../..").canonicalize().unwrap();
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    build_ebpf_programs(&root, &out);
    build_bpf_ccs(&root, &out);
}

const BPF_CCS: [&str; 4] = ["uno", "gemini", "oscar", "smartt"];

fn build_bpf_ccs(root: &Path, out: &Path) {
    println!("cargo:rerun-if-env-changed=XDCC_BPF_CC_DIR");
    for p in ["kmods/bpf", "kmods/algo/src"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    let dest = out.join("bpf-cc");
    if let Ok(dir) = env::var("XDCC_BPF_CC_DIR") {
        std::fs::create_dir_all(&dest).unwrap();
        for cc in BPF_CCS {
            let f = format!("bpf_{cc}.o");
            std::fs::copy(Path::new(&dir).join(&f), dest.join(&f)).unwrap_or_else(|e| panic!("XDCC_BPF_CC_DIR={dir}/{f}: {e}"));
        }
        return;
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        panic!(
            "the BPF congestion controls are built against the kernel's BTF, and /sys/kernel/btf/vmlinux does not \
             exist on this machine (CONFIG_DEBUG_INFO_BTF); build them elsewhere and set XDCC_BPF_CC_DIR"
        );
    }
    let mut cmd = Command::new(root.join("kmods/bpf/build.sh"));
    cmd.arg(&dest);
    if let Some(d) = find_bpf_linker() {
        cmd.env("XDCC_BPF_LINKER_DIR", d);
    }
    for (k, _) in env::vars() {
        if k.starts_with("CARGO_") && k != "CARGO_HOME" || k == "RUSTFLAGS" || k == "RUSTC_WRAPPER" || k == "RUSTC_WORKSPACE_WRAPPER" || k == "RUSTUP_TOOLCHAIN" {
            cmd.env_remove(k);
        }
    }
    let status = cmd.status().expect("running kmods/bpf/build.sh");
    if !status.success() {
        panic!("kmods/bpf/build.sh failed ({status}); its toolchain comes from ebpf/install-toolchain.sh");
    }
}

fn build_ebpf_programs(root: &Path, out: &Path) {
    println!("cargo:rerun-if-env-changed=XDCC_EBPF_OBJECT");
    println!("cargo:rerun-if-env-changed=XDCC_BPF_LINKER_DIR");
    for p in ["ebpf/programs/src", "ebpf/programs/Cargo.toml", "ebpf/programs/Cargo.lock", "ebpf/programs/.cargo/config.toml", "ebpf/common/src"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    let dest = out.join("xdcc-ebpf.o");
    if let Ok(obj) = env::var("XDCC_EBPF_OBJECT") {
        std::fs::copy(&obj, &dest).unwrap_or_else(|e| panic!("XDCC_EBPF_OBJECT={obj}: {e}"));
        return;
    }
    let linker_dir = find_bpf_linker().unwrap_or_else(|| {
        panic!(
            "bpf-linker not found (looked in $XDCC_BPF_LINKER_DIR, PATH and ~/.cache/xdcc/tools).\n\
             Install the eBPF toolchain first: ebpf/install-toolchain.sh"
        )
    });
    let rustc = Path::new("/usr/bin/rustc");
    if !rustc.exists() {
        panic!("/usr/bin/rustc (Debian rustc-web) not found: run ebpf/install-toolchain.sh");
    }
    let target_dir = out.join("ebpf-target");
    let path = format!("{}:{}", linker_dir.display(), env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root.join("ebpf/programs"))
        .args(["build", "--release", "--locked", "--target", "bpfel-unknown-none", "--target-dir"])
        .arg(&target_dir)
        .env("PATH", path)
        .env("RUSTC", rustc)
        .env("RUSTC_BOOTSTRAP", "1");
    // Do not leak the host build's settings into the BPF build.
    for (k, _) in env::vars() {
        if k.starts_with("CARGO_") && k != "CARGO_HOME" || k == "RUSTFLAGS" || k == "RUSTC_WRAPPER" || k == "RUSTC_WORKSPACE_WRAPPER" || k == "RUSTUP_TOOLCHAIN" {
            cmd.env_remove(k);
        }
    }
    let status = cmd.status().expect("running cargo for the eBPF build");
    if !status.success() {
        panic!("building ebpf/programs failed ({status})");
    }
    let obj = target_dir.join("bpfel-unknown-none/release/xdcc-ebpf");
    std::fs::copy(&obj, &dest).unwrap_or_else(|e| panic!("{}: {e}", obj.display()));
}

fn find_bpf_linker() -> Option<PathBuf> {
    if let Ok(d) = env::var("XDCC_BPF_LINKER_DIR") {
        return Some(PathBuf::from(d));
    }
    for d in env::split_paths(&env::var("PATH").unwrap_or_default()) {
        if d.join("bpf-linker").is_file() {
            return Some(d);
        }
    }
    let cache = env::var("XDCC_CACHE").map(PathBuf::from).ok().or_else(|| {
        env::var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|_| env::var("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .ok()
            .map(|c| c.join("xdcc"))
    })?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join("tools"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|d| d.join("bpf-linker").is_file())
        .collect();
    found.sort();
    found.pop()
}

//! The host backend's plan (`xdcc-sim plan`): a scenario's queue, marking and
//! tunables for one CC, in the absolute values a real port and the kernel's
//! BPF CCs take; what the host cannot build is one clear error.

use xdcc_sim::plan::{host_plan, Marker};
use xdcc_sim::Scenario;

fn scenario(name: &str) -> Scenario {
    let path = format!("{}/../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Scenario::from_file(path.as_ref()).unwrap()
}

#[test]
fn each_cc_gets_its_own_marker_on_the_one_port() {
    let sc = scenario("realspeed-4to1");
    let uno = host_plan(&sc, "uno").unwrap();
    assert_eq!(uno.registered, "bpf_uno");
    assert_eq!((uno.port.rate_mbit, uno.port.buffer_bytes), (1000, 675_000));
    // Uno's phantom queue (90 %, 20-80 % of the buffer); its physical RED is
    // not emulated, and the plan says so.
    assert_eq!(uno.port.marker, Some(Marker::Phantom { drain_pct: 90, size_bytes: 675_000, kmin_pct: 20, kmax_pct: 80 }));
    assert_eq!(uno.notes.len(), 1, "{:?}", uno.notes);
    // SMaRTT's RED on the physical queue: a mirror draining at line rate.
    let smartt = host_plan(&sc, "smartt").unwrap();
    assert_eq!(smartt.port.marker, Some(Marker::Phantom { drain_pct: 100, size_bytes: 675_000, kmin_pct: 20, kmax_pct: 80 }));
    // The kernel's cubic: the port as written, no tunables.
    let cubic = host_plan(&sc, "cubic").unwrap();
    assert_eq!((cubic.registered.as_str(), cubic.port.marker.clone()), ("cubic", None));
    assert!(cubic.groups.iter().all(|g| g.tunables.is_empty()));
    // The model's pacing and network reach the kernel.
    assert_eq!(uno.groups[0].tunables.get("window_pacing_pct"), Some(&100));
    assert_eq!(uno.net.get("net_link_rate_mbps"), Some(&1000));
}

#[test]
fn a_step_threshold_is_k_on_a_mirror_of_the_port() {
    let plan = host_plan(&scenario("dctcp-2to1"), "dctcp").unwrap();
    // K = 65 packets of 1500 B: marking from 97.5 kB (10 % of the mirror).
    assert_eq!(plan.port.marker, Some(Marker::Phantom { drain_pct: 100, size_bytes: 975_000, kmin_pct: 10, kmax_pct: 11 }));
}

#[test]
fn a_model_nic_no_faster_than_the_port_is_noted() {
    // The executors' senders are not rate-limited; the real-speed files give
    // the model faster NICs (no note), a file that keeps the simulator's
    // default (the port's rate) is told so, once per flow group.
    assert!(host_plan(&scenario("realspeed-incast"), "dctcp").unwrap().notes.is_empty());
    let mut sc = scenario("realspeed-incast");
    sc.flows[1].host_rate_gbps = None;
    let notes = host_plan(&sc, "dctcp").unwrap().notes;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("flows.incast:") && notes[0].contains("not rate-limited"), "{notes:?}");
}

#[test]
fn what_the_host_cannot_build_is_one_clear_error() {
    let e = host_plan(&scenario("amrt-fig1-multi-bottleneck"), "amrt").unwrap_err().to_string();
    assert!(e.contains("one bottleneck port"), "{e}");
    let e = host_plan(&scenario("realspeed-4to1"), "vegas2").unwrap_err().to_string();
    assert!(e.contains("unknown congestion control"), "{e}");
    let e = host_plan(&scenario("uno-fig13a-linkfail-k4"), "uno").unwrap_err().to_string();
    assert!(e.contains("routed network") && e.contains("simulator only"), "{e}");
}

#[test]
fn the_vm_plan_is_the_scenario_slowed_with_modules() {
    use xdcc_sim::plan::{plan, Executor};
    let sc = scenario("realspeed-join-leave");
    let host = host_plan(&sc, "uno").unwrap();
    let vm = plan(&sc, "uno", Executor::VM).unwrap();
    // The test kernel's module, not the BPF CC.
    assert_eq!((vm.registered.as_str(), vm.groups[0].registered.as_str()), ("uno", "uno"));
    assert_eq!(vm.time_scale, 20);
    // Times 20× longer, rates 20× lower, bytes as they are.
    assert_eq!(vm.port.rate_mbit * 20, host.port.rate_mbit);
    assert_eq!(vm.port.buffer_bytes, host.port.buffer_bytes);
    assert_eq!(vm.port.marker, host.port.marker);
    assert_eq!(vm.duration_s, host.duration_s * 20.0);
    assert_eq!((vm.measure_from_s, vm.measure_to_s), (host.measure_from_s * 20.0, host.measure_to_s * 20.0));
    for (v, h) in vm.groups.iter().zip(&host.groups) {
        assert_eq!((v.rtt_us, v.start_s, v.stop_s), (h.rtt_us * 20.0, h.start_s * 20.0, h.stop_s.map(|s| s * 20.0)));
        // Every tunable of the slowed plan, the scenario's own among them:
        // the preset's are gains and packet counts, unscaled.
        assert!(h.tunables.iter().all(|(k, x)| v.tunables.get(k) == Some(x)), "{:?} vs {:?}", v.tunables, h.tunables);
    }
    assert_eq!(vm.net["net_link_rate_mbps"] * 20, host.net["net_link_rate_mbps"]);
    assert_eq!(vm.net["net_intra_rtt_us"], host.net["net_intra_rtt_us"] * 20);
    // The guest's kernel marks on the port's own queue (a switch profile):
    // UnoCC's RED beside its phantom queue, which the host cannot emulate.
    assert!(host.port.profile.is_none() && host.notes.len() == 1);
    let profile = xdcc_switch::Profile::parse(vm.port.profile.as_deref().unwrap()).unwrap();
    assert_eq!((profile.port.rate_mbit, profile.buffer_bytes()), (50, 675_000));
    assert_eq!(profile.marking, xdcc_switch::Marking::Red { min_pct: 25, max_pct: 75, probability_pct: 100 });
    assert!(vm.notes.is_empty(), "{:?}", vm.notes);
    // DCTCP's step at K = 65 packets: the qdisc's, no eBPF mirror.
    let dctcp = plan(&scenario("realspeed-4to1"), "dctcp", Executor::VM).unwrap();
    let profile = xdcc_switch::Profile::parse(dctcp.port.profile.as_deref().unwrap()).unwrap();
    assert_eq!((dctcp.port.marker.clone(), profile.red_thresholds()), (None, (65 * 1500, 66 * 1500)));
    // What the kernel would derive from the slowed network is given at the
    // scenario's, slowed: Gemini's K stays 50 packets per Gbit/s of the
    // scenario's 1 Gbit/s (not of 50 Mbit/s), its T = 5 ms stretches, its C
    // is the slowed port's.
    let sc = scenario("realspeed-4to1");
    let g = plan(&sc, "gemini", Executor::VM).unwrap();
    let t = &g.groups[0].tunables;
    assert_eq!((t["k_bytes"], t["t_ns"], t["rate_bytes_per_sec"]), (75_000, 100_000_000, 50_000_000 / 8));
    // A rate that does not divide is refused.
    let e = plan(&sc, "gemini", Executor { time_scale: 7, ..Executor::VM }).unwrap_err().to_string();
    assert!(e.contains("not a whole number of Mbit/s"), "{e}");
}

#[test]
fn duration_lengthens_the_plan_and_refuses_an_empty_measured_interval() {
    // `xdcc-sim plan --duration S` (testbed/host/run.py --duration): the run
    // and its measured interval end at S; the interval's start stays.
    let sim = env!("CARGO_BIN_EXE_xdcc-sim");
    let file = format!("{}/../scenarios/realspeed-4to1.toml", env!("CARGO_MANIFEST_DIR"));
    let plan = |extra: &[&str]| {
        std::process::Command::new(sim).args(["plan", &file, "--cc", "dctcp"]).args(extra).output().unwrap()
    };
    let out = plan(&["--duration", "12", "--backend", "vm"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 20x slowed in the guest: 12 s -> 240 s, measured from 2 s -> 40 s.
    assert_eq!((p["duration_s"].as_f64(), p["measure_from_s"].as_f64(), p["measure_to_s"].as_f64()), (Some(240.0), Some(40.0), Some(240.0)));
    let out = plan(&["--duration", "2"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--duration 2") && e.contains("measure_from_ms"), "{e}");
}

#[test]
fn offloads_follow_the_scenario_and_the_vm_turns_them_off() {
    use xdcc_sim::plan::{plan, Executor};
    // On by default (as servers run); `host_offloads = false` turns them off;
    // the vm's port marks per skb, so its plans never have them.
    let on = scenario("realspeed-10g-4to1");
    assert!(host_plan(&on, "uno").unwrap().offloads);
    assert!(!plan(&on, "uno", Executor::VM).unwrap().offloads);
    let off = scenario("realspeed-2g-4to1-no-offloads");
    assert!(!off.host_offloads);
    assert!(!host_plan(&off, "cubic").unwrap().offloads);
}

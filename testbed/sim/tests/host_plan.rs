//! The host backend's plan (`xdcc-sim plan`): a scenario's queue, marking and
//! tunables for one CC, in the absolute values a real port and the kernel's
//! BPF CCs take; what the host cannot build is one clear error.

use xdcc_sim::plan::{host_plan, Marker};
use xdcc_sim::Scenario;

fn scenario(name: &str) -> Scenario {
    let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
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
fn what_the_host_cannot_build_is_one_clear_error() {
    let e = host_plan(&scenario("amrt-fig1-multi-bottleneck"), "amrt").unwrap_err().to_string();
    assert!(e.contains("one bottleneck port"), "{e}");
    let e = host_plan(&scenario("realspeed-4to1"), "vegas2").unwrap_err().to_string();
    assert!(e.contains("unknown congestion control"), "{e}");
    let e = host_plan(&scenario("uno-fig13a-linkfail-k4"), "uno").unwrap_err().to_string();
    assert!(e.contains("routed network") && e.contains("simulator only"), "{e}");
}

//! Routed networks in the simulator: ECMP, load balancers, black holes,
//! reordering, UnoRC — and the ordering of Uno's Fig. 13A on the CI-sized
//! topology (`scenarios/uno-fig13a-linkfail-k4.toml`; the full size is in
//! `bench/uno-multipath.py` and testbed/RESULTS.md).

use xdcc_sim::{run, CcKind, LbSpec, RunReport, Scenario};

fn scenario(name: &str) -> Scenario {
    let path = format!("{}/../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Scenario::from_file(path.as_ref()).unwrap()
}

fn with(mut sc: Scenario, lb: &str, ec: bool, seed: u64) -> Scenario {
    for f in &mut sc.flows {
        f.lb = Some(LbSpec::named(lb, sc.rto_us).unwrap());
        if !ec {
            f.ec = None;
        }
    }
    sc.seed = seed;
    sc
}

fn fcts(r: &RunReport) -> Vec<Option<f64>> {
    r.flows.iter().map(|f| f.fct_ms).collect()
}

/// Mean over `seeds` seeds of the flows' mean FCT (ms), and how many flows
/// did not finish.
fn mean_fct(sc: &Scenario, lb: &str, ec: bool, seeds: u64) -> (f64, usize) {
    let (mut sum, mut undone) = (0.0, 0);
    for seed in 0..seeds {
        let r = run(&with(sc.clone(), lb, ec, 100 + seed), CcKind::Uno).unwrap();
        let done: Vec<f64> = fcts(&r).into_iter().flatten().collect();
        undone += r.flows.len() - done.len();
        sum += done.iter().sum::<f64>() / done.len().max(1) as f64;
    }
    (sum / seeds as f64, undone)
}

/// Uno Fig. 13A's claim (uno-sc25 §5.5): with a border link black-holed,
/// UnoLB with UnoRC's coding finishes the flows sooner than spraying and
/// PLB with coding, and coding speeds up both UnoLB and spraying. Measured
/// (20 seeds, k = 4): UnoLB+EC 3.46 ms, spraying+EC 4.70, PLB+EC 4.97,
/// UnoLB 5.00, spraying 9.96 — ideal (no failure) 2.2 ms.
#[test]
fn fig13a_unolb_with_coding_beats_spraying_and_plb_around_a_black_hole() {
    let sc = scenario("uno-fig13a-linkfail-k4");
    let seeds = 12;
    let (uno_ec, u0) = mean_fct(&sc, "unolb", true, seeds);
    let (spray_ec, u1) = mean_fct(&sc, "spray", true, seeds);
    let (plb_ec, u2) = mean_fct(&sc, "plb-artifact", true, seeds);
    let (uno, u3) = mean_fct(&sc, "unolb", false, seeds);
    let (spray, u4) = mean_fct(&sc, "spray", false, seeds);
    eprintln!("mean FCT over {seeds} seeds: UnoLB+EC {uno_ec:.2} ms, spraying+EC {spray_ec:.2}, PLB+EC {plb_ec:.2}, UnoLB {uno:.2}, spraying {spray:.2}");
    assert_eq!(u0 + u1 + u2 + u3 + u4, 0, "every flow finishes: each strategy leaves the dead link");
    assert!(uno_ec < 0.85 * spray_ec, "UnoLB+EC {uno_ec:.2} ms vs spraying+EC {spray_ec:.2}");
    assert!(uno_ec < 0.85 * plb_ec, "UnoLB+EC {uno_ec:.2} ms vs PLB+EC {plb_ec:.2}");
    assert!(uno_ec < 0.85 * uno, "coding speeds UnoLB up: {uno_ec:.2} vs {uno:.2} ms");
    assert!(spray_ec < 0.6 * spray, "coding speeds spraying up: {spray_ec:.2} vs {spray:.2} ms");
}

/// Switches do not learn of a black hole (the artifact's `-fail_one`): a
/// flow that ECMP hashes onto it loses every packet, for good — which is
/// why a sender has to move.
#[test]
fn ecmp_flows_on_a_black_hole_never_finish_and_the_dead_link_carries_nothing() {
    let sc = scenario("uno-fig13a-linkfail-k4");
    let mut stuck = 0;
    for seed in 0..6 {
        let r = run(&with(sc.clone(), "ecmp", false, seed), CcKind::Uno).unwrap();
        stuck += fcts(&r).iter().filter(|f| f.is_none()).count();
        let dead = r.queues.iter().find(|q| q.name == "a.border->b.border#0").unwrap();
        assert_eq!(dead.utilization, 0.0);
        assert_eq!(dead.blackholed, dead.drops);
        let others_used = r.queues.iter().filter(|q| q.name.starts_with("a.border->b.border#") && q.utilization > 0.0).count();
        assert!(others_used >= 3, "8 flows over 7 live links use several of them ({others_used})");
    }
    // 8 flows x 6 seeds, each on the dead link with probability 1/8.
    assert!(stuck >= 1, "some ECMP flow hashed onto the black hole");
    assert!(stuck <= 16, "{stuck} of 48 flows stuck: ECMP spreads flows");
}

/// Spraying one flow over a fat tree reorders its packets; RACK's adaptive
/// reordering window (Linux) keeps that from being read as loss after the
/// first time, so almost nothing is retransmitted.
#[test]
fn rack_tolerates_spraying_reorder_after_it_has_seen_it() {
    let text = r#"
name = "spray-fat-tree"
duration_ms = 20
cc = ["dctcp"]
[net]
link_rate_gbps = 10.0
intra_rtt_us = 12
inter_rtt_us = 12
mtu = 1500
[topology]
kind = "fat_tree"
k = 4
link_rate_gbps = 10.0
hop_latency_us = 1.0
buffer_kb = 500
marking = { kind = "threshold", k_pkts = 30 }
[[flows]]
name = "spray"
count = 2
pairs = ["a.0>a.15", "a.1>a.14"]
size_kb = 10000
lb = { kind = "spray" }
"#;
    let sc = Scenario::from_toml(text).unwrap();
    let r = run(&sc, CcKind::Dctcp).unwrap();
    for f in &r.flows {
        assert!(f.fct_ms.is_some(), "{} finished", f.name);
        let packets = 10_000_000 / 1500;
        assert!(f.spurious >= 1, "{}: spraying reorders (spurious retransmissions {})", f.name, f.spurious);
        assert!(f.losses < packets / 50, "{}: {} packets declared lost of {packets}", f.name, f.losses);
    }
    // The same without reordering tolerance would be many: each flow sees a
    // reordering per few packets. ECMP: none at all.
    let mut ecmp = sc.clone();
    for f in &mut ecmp.flows {
        f.lb = None;
    }
    let e = run(&ecmp, CcKind::Dctcp).unwrap();
    assert!(e.flows.iter().all(|f| f.spurious == 0 && f.losses == 0), "one path: in order, no loss");
}

/// Table 1's correlated drops with UnoRC: a block that loses at most two
/// of its ten packets costs nothing; the coded flow does not wait for
/// timeouts (Fig. 13B's claim, as the paper runs it).
#[test]
fn coding_hides_table1_drops() {
    let sc = scenario("uno-fig13b-random-drops");
    let (coded, u0) = mean_fct(&sc, "unolb", true, 16);
    let (plain, u1) = mean_fct(&sc, "unolb", false, 16);
    eprintln!("one 5 MB flow under Table 1 drops, 16 seeds: UnoLB+EC {coded:.2} ms, UnoLB {plain:.2} ms");
    assert_eq!(u0 + u1, 0);
    assert!(coded < 2.4, "coded flows finish in about one RTT plus the transfer: {coded:.2} ms");
    assert!(plain > coded, "without coding, some seeds wait for a timeout");
}

#[test]
fn routed_scenarios_refuse_bad_input() {
    let base = std::fs::read_to_string(format!("{}/../scenarios/uno-fig13a-linkfail-k4.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let bad = [
        ("k = 4\n", "k = 5\n", "k must be even"),
        ("fail = [{ link = \"border0\" }]", "fail = [{ link = \"border9\" }]", "no link"),
        ("\"a.0>b.3\"", "\"a.0>b.99\"", "hosts of DC b"),
        ("\"a.0>b.3\"", "\"a.0-b.3\"", "is not \"src>dst\""),
        ("lb = { kind = \"unolb\" }", "lb = { kind = \"unolb\", subflows = 0 }", "subflows"),
        ("nack_timeout_us = 640", "nack_timeout_us = 0", "nack_timeout_us"),
        ("size_kb = 5000\n", "size_kb = 5000\nrtt_us = 10\n", "not rtt_us"),
        ("border_latency_us = 886.5", "border_latency_us = 886.5\nborder_loss = { kind = \"block\", p = [0.7, 0.5] }", "sum to at most 1"),
    ];
    for (from, to, want) in bad {
        assert!(base.contains(from), "{from}");
        let e = Scenario::from_toml(&base.replacen(from, to, 1)).unwrap_err();
        assert!(format!("{e:#}").contains(want), "{to}: {e:#}");
    }
    let mut sc = Scenario::from_toml(&base).unwrap();
    sc.flows[0].path = vec!["x".into()];
    assert!(sc.validate().is_err(), "a routed flow has no path");
    let series = std::fs::read_to_string(format!("{}/../scenarios/single-flow.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let e = Scenario::from_toml(&series.replacen("[[flows]]", "[[flows]]\nlb = { kind = \"spray\" }", 1)).unwrap_err();
    assert!(format!("{e:#}").contains("need a [topology]"), "{e:#}");
}

/// `src = "a"`, `dst = "a"`: the group's flows get distinct senders and
/// distinct receivers of the DC, and none sends to itself (a permutation
/// when the group has as many flows as the DC has hosts), whatever the seed.
#[test]
fn a_dc_to_itself_is_a_permutation_without_self_pairs() {
    let text = r#"
name = "perm"
duration_ms = 5
cc = ["dctcp"]
[net]
link_rate_gbps = 10.0
intra_rtt_us = 12
inter_rtt_us = 12
mtu = 1500
[topology]
kind = "fat_tree"
k = 4
link_rate_gbps = 10.0
hop_latency_us = 1.0
buffer_kb = 500
[[flows]]
name = "p"
count = 16
src = "a"
dst = "a"
size_kb = 100
"#;
    for seed in 0..20 {
        let mut sc = Scenario::from_toml(text).unwrap();
        sc.seed = seed;
        let r = run(&sc, CcKind::Dctcp).unwrap();
        let pairs: Vec<(String, String)> = r
            .flows
            .iter()
            .map(|f| {
                let (a, b) = f.hosts.as_deref().unwrap().split_once('>').unwrap();
                (a.to_string(), b.to_string())
            })
            .collect();
        assert!(pairs.iter().all(|(a, b)| a != b), "seed {seed}: a flow to itself: {pairs:?}");
        let srcs: std::collections::BTreeSet<_> = pairs.iter().map(|p| &p.0).collect();
        let dsts: std::collections::BTreeSet<_> = pairs.iter().map(|p| &p.1).collect();
        assert_eq!((srcs.len(), dsts.len()), (16, 16), "seed {seed}: every host sends once and receives once");
    }
}

/// The 2-DC testbed's network (`kind = "two_dc"`): 2 hosts per DC, 1 Gbit/s
/// links of 10 µs, `paths` WAN links of 100 µs between the border routers;
/// `extra` goes into `[topology]`, `flows` after it.
fn two_dc(paths: u32, extra: &str, flows: &str) -> String {
    format!(
        r#"
name = "two-dc"
duration_ms = 100
cc = ["dctcp"]
rto_backoff = "timer"
[net]
link_rate_gbps = 1.0
intra_rtt_us = 40
inter_rtt_us = 280
mtu = 1500
[topology]
kind = "two_dc"
hosts_per_dc = 2
link_rate_gbps = 1.0
hop_latency_us = 10.0
buffer_kb = 300
marking = {{ kind = "threshold", k_pkts = 20 }}
border_links = {paths}
border_latency_us = 100.0
{extra}
{flows}
"#
    )
}

/// Bytes a flow delivered between two times (ms), from the run's samples
/// (one per ms).
fn delivered_between(r: &RunReport, flow: usize, from_ms: usize, to_ms: usize) -> u64 {
    r.samples.delivered[to_ms][flow] - r.samples.delivered[from_ms][flow]
}

/// A black hole that heals (`until_ms`): the one ECMP flow over the one WAN
/// link carries nothing while it lasts and carries again after, once its
/// timeout fires; a black hole without `until_ms` keeps it at nothing.
#[test]
fn a_healed_black_hole_carries_again() {
    let flow = "[[flows]]\nname = \"x\"\npairs = [\"a.0>b.1\"]\n";
    let healed = Scenario::from_toml(&two_dc(1, "fail = [{ link = \"border0\", from_ms = 20, until_ms = 50 }]", flow)).unwrap();
    let r = run(&healed, CcKind::Dctcp).unwrap();
    assert!(delivered_between(&r, 0, 5, 20) > 1_000_000, "it runs before the failure");
    assert_eq!(delivered_between(&r, 0, 22, 50), 0, "nothing through the black hole");
    assert!(delivered_between(&r, 0, 70, 100) > 1_000_000, "it runs again after the heal: {} B", delivered_between(&r, 0, 70, 100));
    let link = r.queues.iter().find(|q| q.name == "a.border->b.border#0").unwrap();
    assert!(link.blackholed > 0 && link.blackholed == link.drops);
    let forever = Scenario::from_toml(&two_dc(1, "fail = [{ link = \"border0\", from_ms = 20 }]", flow)).unwrap();
    let r = run(&forever, CcKind::Dctcp).unwrap();
    assert_eq!(delivered_between(&r, 0, 22, 100), 0);
}

/// A flow group pinned to a link (`path` with `rtt_us` in a routed network)
/// crosses that link and no other, whatever ECMP would do, and its base RTT
/// is its `rtt_us` (the link's own delay is part of it, not added).
#[test]
fn a_pinned_flow_crosses_exactly_its_link() {
    let sc = Scenario::from_toml(&two_dc(
        4,
        "",
        "[[flows]]\nname = \"cross\"\ncount = 2\npath = [\"b.border->a.border#3\"]\nrtt_us = 300\n",
    ))
    .unwrap();
    let r = run(&sc, CcKind::Dctcp).unwrap();
    let delivered: f64 = r.flows.iter().map(|f| f.delivered_mb * 1e6).sum();
    for q in r.queues.iter().filter(|q| q.name.contains(".border->")) {
        if q.name == "b.border->a.border#3" {
            assert!(q.utilization > 0.9, "{}: {}", q.name, q.utilization);
        } else {
            assert_eq!(q.utilization, 0.0, "{}", q.name);
        }
    }
    assert!(delivered > 0.9 * 1e9 / 8.0 * 0.1, "the link's rate for the run: {delivered} B");
    assert!(r.flows.iter().all(|f| f.rtt_us == 300.0 && f.hosts.is_none()));
    // One packet alone: done in its rtt_us plus two serializations (the
    // sender's NIC and the link, 12 µs each) and up to one of jitter, not
    // the link's 2 x 100 µs more.
    let probe = Scenario::from_toml(&two_dc(4, "", "[[flows]]\nname = \"probe\"\npath = [\"b.border->a.border#3\"]\nrtt_us = 300\nsize_kb = 1.5\n")).unwrap();
    let fct_us = run(&probe, CcKind::Dctcp).unwrap().flows[0].fct_ms.unwrap() * 1e3;
    assert!((324.0..=337.0).contains(&fct_us), "one packet in {fct_us} us");
}

#[test]
fn two_dc_scenarios_refuse_bad_input() {
    let pinned = |path: &str, rtt: &str| format!("[[flows]]\nname = \"p\"\npath = {path}\nrtt_us = {rtt}\n");
    let ok = "[[flows]]\nname = \"x\"\nsrc = \"a.0\"\ndst = \"b.1\"\n";
    let bad = [
        (two_dc(4, "", &pinned("[\"b.border->a.border#4\"]", "300")), "flows.p.path: no link \"b.border->a.border#4\""),
        (two_dc(4, "", &pinned("[\"a.sw->a.border\", \"b.border->a.border#0\"]", "300")), "does not start where the link before it ends"),
        (two_dc(4, "", &pinned("[\"b.border->a.border#0\"]", "150")), "less than twice its links' delays"),
        (two_dc(4, "", &pinned("[\"b.border->a.border#0\"]", "300").replace("rtt_us", "src = \"a.0\"\nrtt_us")), "pinned to links (path) has no src"),
        (two_dc(4, "fail = [{ link = \"border1\", from_ms = 20, until_ms = 10 }]", ok), "until_ms must be after from_ms"),
        (two_dc(4, "fail = [{ link = \"border9\" }]", ok), "no link \"border9\""),
        (two_dc(4, "", ok).replace("hosts_per_dc = 2", "hosts_per_dc = 0"), "hosts_per_dc must be within 1..=256"),
        (two_dc(4, "", ok).replace("hosts_per_dc = 2", "k = 4"), "topology.k is a fat tree's arity"),
        (two_dc(4, "", &ok.replace("b.1", "b.2")), "hosts of DC b are b.0 .. b.1"),
        (two_dc(4, "report = [\"a.sw->a.7\"]", ok), "topology.report: no link"),
    ];
    for (text, want) in bad {
        let e = Scenario::from_toml(&text).unwrap_err();
        assert!(format!("{e:#}").contains(want), "want {want:?}, got: {e:#}");
    }
    Scenario::from_toml(&two_dc(4, "report = [\"a.sw->a.1\"]", &(ok.to_string() + &pinned("[\"b.sw->b.border\", \"border0\"]", "300").replace("border0", "b.border->a.border#0")))).unwrap();
}

/// After a long black hole (six timeouts) heals: with Linux's backoff
/// (`rto_backoff = "timer"`) the flow is back at the line rate within a few
/// RTTs of its next timeout; with the smoothed RTT doubled at every timeout
/// (`"srtt"`) its pacing rate (cwnd / srtt) keeps it at a trickle.
#[test]
fn linux_rto_backoff_resumes_at_pace_after_a_heal() {
    let flow = "[[flows]]\nname = \"x\"\npairs = [\"a.0>b.1\"]\n";
    let text = two_dc(1, "fail = [{ link = \"border0\", from_ms = 20, until_ms = 60 }]", flow)
        .replace("duration_ms = 100", "duration_ms = 150\nmin_rto_us = 1000\nwindow_pacing_gain = 1.0");
    let after_heal = |backoff: &str| {
        let sc = Scenario::from_toml(&text.replace("rto_backoff = \"timer\"", &format!("rto_backoff = \"{backoff}\""))).unwrap();
        let r = run(&sc, CcKind::Dctcp).unwrap();
        assert!(r.flows[0].rtos >= 5, "{backoff}: {} timeouts", r.flows[0].rtos);
        delivered_between(&r, 0, 120, 150)
    };
    let (timer, srtt) = (after_heal("timer"), after_heal("srtt"));
    assert!(timer > 3_000_000, "timer: {timer} B in 30 ms at 1 Gbit/s");
    assert!(srtt * 10 < timer, "srtt: {srtt} B vs timer {timer} B");
}

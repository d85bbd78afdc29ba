//! Routed networks in the simulator: ECMP, load balancers, black holes,
//! reordering, UnoRC — and the ordering of Uno's Fig. 13A on the CI-sized
//! topology (`scenarios/uno-fig13a-linkfail-k4.toml`; the full size is in
//! `bench/fig13.sh` and testbed/RESULTS.md).

use xdcc_sim::{run, CcKind, LbSpec, RunReport, Scenario};

fn scenario(name: &str) -> Scenario {
    let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
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
    let base = std::fs::read_to_string(format!("{}/scenarios/uno-fig13a-linkfail-k4.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let bad = [
        ("k = 4\n", "k = 5\n", "k must be even"),
        ("fail = [{ link = \"border0\" }]", "fail = [{ link = \"border9\" }]", "no link"),
        ("\"a.0>b.3\"", "\"a.0>b.99\"", "hosts of DC b"),
        ("\"a.0>b.3\"", "\"a.0-b.3\"", "is not \"src>dst\""),
        ("lb = { kind = \"unolb\" }", "lb = { kind = \"unolb\", subflows = 0 }", "subflows"),
        ("nack_timeout_us = 640", "nack_timeout_us = 0", "nack_timeout_us"),
        ("size_kb = 5000\n", "size_kb = 5000\nrtt_us = 10\n", "not path or rtt_us"),
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
    let series = std::fs::read_to_string(format!("{}/scenarios/single-flow.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
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

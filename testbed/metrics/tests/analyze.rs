//! `analyze` on synthetic runs whose answers are known: the definitions a
//! testbed report and a simulator prediction both rest on.

use xdcc_metrics::{analyze, phases, Fct, Flow, Row, Run};

const PORT: &str = "dc1sw:h1";

/// Flow i sends at `rates_mbps[i]` from 0 to `dur`; the port sends
/// `sent_mbps` in all and its drop counter rises by one per second.
fn run(rates_mbps: &[f64], classes: &[&str], sent_mbps: f64, dur: f64) -> Run {
    let step = 0.1;
    let n = (dur / step).round() as usize + 1;
    let mut r = Run {
        run_id: "t".into(),
        cc: "x".into(),
        duration_s: dur,
        bottleneck: PORT.into(),
        port_rates_mbit: [(PORT.to_string(), Some(100.0))].into(),
        ..Default::default()
    };
    for (i, rate) in rates_mbps.iter().enumerate() {
        r.flows.push(Flow { id: i as u64, kind: "long".into(), class: classes[i].into(), start_s: 0.0, stop_s: dur });
        let rows = (0..n).map(|k| {
            let t = k as f64 * step;
            Row([t, (rate * 1e6 / 8.0 * t).floor(), 10.0, 1000.0 * (1 + i) as f64, 0.0])
        });
        r.samples.insert(i.to_string(), rows.collect());
    }
    let q = (0..n).map(|k| {
        let t = k as f64 * step;
        Row([t, 3000.0, 2.0, (sent_mbps * 1e6 / 8.0 * t).floor(), (k / 10) as f64])
    });
    r.queues.insert(PORT.into(), q.collect());
    r
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn a_fair_run() {
    let a = analyze(&run(&[25.0; 4], &["intra"; 4], 100.0, 10.0));
    let m = &a.metrics;
    assert_eq!((m.steady_from_s, m.steady_to_s), (5.0, 10.0), "second half of the all-flows period");
    assert!(close(m.jain.unwrap(), 1.0, 1e-3), "{:?}", m.jain);
    assert!(close(m.utilization.unwrap(), 1.0, 1e-2), "{:?}", m.utilization);
    assert_eq!(m.convergence_s, Some(0.0));
    assert!(close(m.intra.per_flow_mbps.unwrap(), 25.0, 0.1));
    assert_eq!(m.intra.n, 4);
    assert_eq!(m.inter.per_flow_mbps, None);
    assert_eq!(m.queue_mean_kb, Some(3.0));
    assert_eq!(m.drops, 10, "the counter rose from 0 to 10 over the run");
    // The median RTT of each flow, averaged over the class: 1, 2, 3, 4 ms.
    assert!(close(m.intra.rtt_ms.unwrap(), 2.5, 1e-9));
    // Rate series: 20 bins of 0.5 s, each at the flow's rate.
    assert_eq!(a.series.rates["0"].len(), 20);
    assert!(a.series.rates["0"].iter().all(|(_, r)| close(*r, 25e6, 1e3)));
}

#[test]
fn an_unfair_run() {
    let m = analyze(&run(&[90.0, 10.0], &["intra", "inter"], 50.0, 10.0)).metrics;
    assert!(close(m.jain.unwrap(), 100.0 * 100.0 / (2.0 * (90.0 * 90.0 + 10.0 * 10.0)), 1e-3));
    assert!(close(m.inter_intra_ratio.unwrap(), 10.0 / 90.0, 1e-2));
    assert_eq!(m.convergence_s, None, "never fair");
    assert!(close(m.utilization.unwrap(), 0.5, 1e-2));
    let s = m.scalars();
    assert_eq!(s.get("jain"), m.jain.as_ref());
    assert!(!s.contains_key("convergence_s"), "undefined metrics are absent");
}

#[test]
fn a_late_sample_of_another_socket_is_not_a_negative_rate() {
    let mut r = run(&[50.0, 50.0], &["intra"; 2], 100.0, 10.0);
    let s = r.samples.get_mut("0").unwrap();
    s.retain(|x| x.t() < 9.5);
    s.push(Row([10.3, 188.0, 1.0, 1.0, 0.0]));
    let m = analyze(&r).metrics;
    assert!(close(m.flow_mbps["0"], 50.0, 1.0), "{:?}", m.flow_mbps);
}

#[test]
fn a_flow_joining_makes_two_phases() {
    // 50 Mbit/s until the second flow joins at 4 s, then 100 Mbit/s on a
    // 100 Mbit/s port: each phase's utilization from its own second half.
    let mut r = run(&[50.0, 50.0], &["intra"; 2], 100.0, 10.0);
    r.flows[1].start_s = 4.0;
    let sent = |t: f64| if t < 4.0 { 50e6 / 8.0 * t } else { 50e6 / 8.0 * 4.0 + 100e6 / 8.0 * (t - 4.0) };
    r.queues.insert(PORT.into(), (0..=100).map(|k| Row([k as f64 / 10.0, 3000.0, 2.0, sent(k as f64 / 10.0).floor(), 0.0])).collect());
    let ph = phases(&r);
    let spans: Vec<(f64, f64, Vec<u64>)> = ph.iter().map(|p| (p.from_s, p.to_s, p.flows.clone())).collect();
    assert_eq!(spans, vec![(0.0, 4.0, vec![0]), (4.0, 10.0, vec![0, 1])]);
    assert!(close(ph[0].ports[PORT].util, 0.5, 1e-2));
    assert!(close(ph[1].ports[PORT].util, 1.0, 1e-2));
    // The steady window starts when the last flow has started.
    let m = analyze(&r).metrics;
    assert_eq!((m.steady_from_s, m.steady_to_s), (7.0, 10.0));
}

#[test]
fn fct_rows_by_size_class() {
    let mut r = run(&[50.0, 50.0], &["intra"; 2], 100.0, 10.0);
    r.fct = (1..=100)
        .map(|i| Fct { ok: true, kind: "incast".into(), class: "intra".into(), size: 50_000.0, fct_s: Some(0.01 * i as f64), ..Default::default() })
        .collect();
    r.fct.push(Fct { ok: false, kind: "incast".into(), class: "intra".into(), size: 50_000.0, fct_s: None, ..Default::default() });
    r.fct.push(Fct { ok: true, kind: "workload".into(), class: "inter".into(), size: 2e6, fct_s: Some(0.5), ..Default::default() });
    r.fct_unfinished = 2;
    let m = analyze(&r).metrics;
    assert_eq!(m.fct.len(), 2);
    let incast = &m.fct[0];
    assert_eq!((incast.kind.as_str(), incast.size.as_str(), incast.n), ("incast", "<100KB", 100));
    assert!(close(incast.p99_ms.unwrap(), 990.0, 1e-6), "nearest rank: the 99th of 100");
    assert!(close(incast.mean_ms.unwrap(), 505.0, 1e-6));
    assert_eq!(m.fct[1].size, "1-10MB");
    assert_eq!(m.fct_count, 102);
    assert_eq!(m.fct_failed, 3, "one failed, two unfinished");
    assert_eq!(m.scalars()["fct_n incast intra <100KB"], 100.0);
}

#[test]
fn the_testbeds_raw_json_parses() {
    // A row as guest.py writes it: more columns than used, the CC's name last.
    let text = r#"{"run_id": "gemini", "cc": "gemini", "label": null, "duration_s": 2, "bottleneck": "p",
        "port_rates_mbit": {"p": 50, "q": null}, "topology": {"ignored": true},
        "flows": [{"id": 0, "kind": "long", "src": "a", "dst": "b", "class": "intra", "start_s": 0, "stop_s": 2}],
        "samples": {"0": [[1.0, 1000, 10, 900, 0, 0, 123, "gemini"], [2.0, 126000, 12, 950, 1, 0, 123, "gemini"]]},
        "queues": {"p": [[1.0, 100, 1, 0, 0], [2.0, 300, 1, 125000, 2]]},
        "fct": [], "fct_unfinished": 0, "cpu": {"busy": 0.4, "softirq": 0.2}, "sample_gaps_ms": {"median": 100, "max": 111}}"#;
    let r: Run = serde_json::from_str(text).unwrap();
    assert_eq!(r.label, "");
    let m = analyze(&r).metrics;
    assert!(close(m.utilization.unwrap(), 125000.0 * 8.0 / 50e6, 1e-12));
    assert_eq!((m.guest_cpu_busy, m.sample_gap_max_ms, m.drops, m.retransmits), (Some(0.4), Some(111.0), 2, 1));
    assert_eq!(m.jain, None, "one flow has no Jain's index");
    let bad = text.replace(r#""bottleneck": "p","#, "");
    let e = serde_json::from_str::<Run>(&bad).unwrap_err().to_string();
    assert!(e.contains("bottleneck"), "{e}");
}

#[test]
fn a_wan_ports_delay_line_is_not_queue() {
    // A border port emulating 98 ms of propagation delay in its qdisc, sending
    // 50 Mbit/s: its backlog holds 98 ms of arrivals on the emulated wire plus
    // the packets waiting for the rate limiter (here 30 kB).
    let (rate, d, waiting) = (50e6 / 8.0, 0.098, 30_000.0);
    let mut r = run(&[25.0, 25.0], &["inter"; 2], 50.0, 10.0);
    r.port_rates_mbit.insert(PORT.into(), Some(50.0));
    r.queues.insert(PORT.into(), (0..=100).map(|k| {
        let t = k as f64 / 10.0;
        Row([t, rate * d + waiting, 40.0, rate * t, 0.0])
    }).collect());
    let m = analyze(&r).metrics;
    assert!(close(m.queue_mean_kb.unwrap(), (rate * d + waiting) / 1e3, 1e-9), "no delay configured: the backlog");
    r.ports.push(xdcc_metrics::Port { ns: "dc1sw".into(), dev: "h1".into(), delay_us: Some(d * 1e6) });
    let a = analyze(&r);
    assert!(close(a.metrics.queue_mean_kb.unwrap(), waiting / 1e3, 1e-6), "{:?}", a.metrics.queue_mean_kb);
    assert!(close(a.metrics.queue_p99_kb.unwrap(), waiting / 1e3, 1e-6));
    assert!(close(a.metrics.utilization.unwrap(), 1.0, 1e-9), "sent bytes untouched");
    // The plotted series and the phases use the same queue; the packet
    // count scales with it.
    let late = a.series.queue.last().unwrap();
    assert!(close(late.0[1], waiting, 1e-6) && late.0[2] == (40.0 * waiting / (rate * d + waiting)).round());
    assert!(close(a.metrics.phases[0].ports[PORT].queue_mean_kb.unwrap(), waiting / 1e3, 1e-6));
}

#[test]
fn a_link_failure_cuts_phases_and_counts_stuck_flows_and_fcts() {
    // Flow 1 carries nothing from 3 s on (its path black-holed at 3 s,
    // healed at 7 s); cross traffic from 8 s cuts a third phase without
    // counting as a long flow. Sized flows: one per phase, the second
    // never finishing.
    let mut r = run(&[40.0, 40.0], &["inter"; 2], 80.0, 10.0);
    let s = r.samples.get_mut("1").unwrap();
    for row in s.iter_mut().filter(|x| x.t() > 3.0) {
        row.0[1] = (40e6 / 8.0 * 3.0_f64).floor();
    }
    r.events = vec![
        xdcc_metrics::Event { at_s: 3.0, link: "wan2".into(), action: "blackhole".into() },
        xdcc_metrics::Event { at_s: 7.0, link: "wan2".into(), action: "heal".into() },
    ];
    r.flows.push(Flow { id: 2, kind: "cross".into(), class: "inter".into(), start_s: 8.5, stop_s: 10.0 });
    let sized = |at: f64, fct: Option<f64>| Fct {
        ok: fct.is_some(),
        unfinished: fct.is_none(),
        at_s: Some(at),
        kind: "incast".into(),
        class: "inter".into(),
        size: 1e5,
        fct_s: fct,
    };
    r.fct = vec![sized(1.0, Some(0.02)), sized(4.0, None), sized(8.0, Some(0.04))];
    r.fct_unfinished = 1;
    let m = analyze(&r).metrics;
    let spans: Vec<(f64, f64)> = m.phases.iter().map(|p| (p.from_s, p.to_s)).collect();
    assert_eq!(spans, vec![(0.0, 3.0), (3.0, 7.0), (7.0, 8.5), (8.5, 10.0)]);
    assert!(close(m.phases[0].long_mbps.unwrap(), 80.0, 1.0), "{:?}", m.phases[0].long_mbps);
    assert_eq!(m.phases[0].stuck, Some(0));
    assert!(close(m.phases[1].long_mbps.unwrap(), 40.0, 1.0));
    assert_eq!(m.phases[1].stuck, Some(1), "flow 1 carried nothing: under 1/400 of 100 Mbit/s");
    assert_eq!((m.phases[0].fct_n, m.phases[0].fct_mean_ms, m.phases[0].fct_failed), (1, Some(20.0), 0));
    assert_eq!((m.phases[1].fct_n, m.phases[1].fct_mean_ms, m.phases[1].fct_failed), (1, None, 1));
    assert_eq!(m.phases[2].fct_mean_ms, Some(40.0));
    assert_eq!(m.fct_failed, 1, "the unfinished flow counts once");
    assert_eq!(m.jain, Some(xdcc_metrics::jain(&[m.flow_mbps["0"], m.flow_mbps["1"]]).unwrap()), "cross traffic is not in Jain");
    let s = m.scalars();
    assert_eq!(s["phase 3-7 s stuck"], 1.0);
    assert!(close(s["phase 0-3 s long_mbps"], 80.0, 1.0));
    assert_eq!(s["phase 3-7 s fct_failed"], 1.0);
    assert!(s.contains_key("phase 3-7 s util dc1sw:h1"));
}

//! Leases and fences inside one process: epochs, the fair share, planned leaves, and writes
//! refused once the lease moved on.

mod support;

use std::time::Duration;

use support::{add_charge, connect, fleet_server, now_ms};
use timerwheel_fleet::{
    ack, ack_and_claim, claim_due, load_window, take_over_fires, Claim, FleetError, FleetToken,
    Node,
};

const TTL: Duration = Duration::from_secs(30);

fn held(node: &Node) -> Vec<(i32, i64)> {
    node.held().iter().map(|(s, e)| (*s, *e)).collect()
}

#[test]
fn every_acquisition_grows_the_epoch_even_by_the_same_name() {
    let server = fleet_server(4);
    let mut first = Node::join(connect(&server), "a", TTL).unwrap();
    first.tick().unwrap();
    assert_eq!(held(&first), vec![(0, 1), (1, 1), (2, 1), (3, 1)]);
    first.leave().unwrap();

    // A restart under the same name.
    let mut again = Node::join(connect(&server), "a", TTL).unwrap();
    again.tick().unwrap();
    assert_eq!(held(&again), vec![(0, 2), (1, 2), (2, 2), (3, 2)]);
}

#[test]
fn a_stale_process_of_the_same_name_renews_and_writes_nothing() {
    let server = fleet_server(2);
    let ttl = Duration::from_millis(300);
    let mut old = Node::join(connect(&server), "a", ttl).unwrap();
    old.tick().unwrap();
    let stale = held(&old);
    add_charge(&mut connect(&server), 2, 7, now_ms() - 1);
    std::thread::sleep(ttl * 2); // the old one's lease expires
    let mut new = Node::join(connect(&server), "a", TTL).unwrap();
    new.tick().unwrap();
    assert_eq!(held(&new), vec![(0, 2), (1, 2)]);

    // The old process wakes up: its renewal finds nothing, its writes are refused.
    let change = old.tick().unwrap();
    assert_eq!(change.lost, vec![0, 1]);
    assert!(change.acquired.is_empty(), "{change:?}");
    let refused = claim_due(old.client(), "a", &stale, now_ms(), 10);
    assert!(
        matches!(refused, Err(FleetError::Fenced { .. })),
        "{refused:?}"
    );
    let shards = held(&new);
    let fires = claim_due(new.client(), "a", &shards, now_ms(), 10).unwrap();
    assert_eq!(fires.len(), 1, "the timer is still there for the new owner");
}

#[test]
fn an_ack_under_an_old_epoch_is_refused_and_changes_nothing() {
    let server = fleet_server(1);
    let ttl = Duration::from_secs(2);
    let mut a = Node::join(connect(&server), "a", ttl).unwrap();
    a.tick().unwrap();
    add_charge(&mut connect(&server), 1, 42, now_ms() - 1);
    let shards = held(&a);
    let fires = claim_due(a.client(), "a", &shards, now_ms(), 10).unwrap();
    assert_eq!(fires.len(), 1);
    std::thread::sleep(ttl * 2);
    let mut b = Node::join(connect(&server), "b", TTL).unwrap();
    let change = b.tick().unwrap();
    assert_eq!(change.acquired, vec![(0, 2)]);
    let again = timerwheel_fleet::take_over_fires(b.client(), "b", 0, 2).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].token.occurrence_ms, fires[0].token.occurrence_ms);
    assert_eq!(again[0].token.version, fires[0].token.version);
    assert_eq!(again[0].token.shard_epoch, 2);

    let tokens = [fires[0].token.clone()];
    assert_eq!(
        ack(a.client(), "a", &tokens),
        Err(FleetError::Fenced { shard: 0, epoch: 1 })
    );
    // Even a write that names the new epoch is refused to a node that does not own it.
    assert!(ack(a.client(), "a", &[again[0].token.clone()]).is_err());
    assert_eq!(ack(b.client(), "b", &[again[0].token.clone()]), Ok(1));
}

#[test]
fn a_fair_share_per_live_node_and_a_planned_leave_frees_at_once() {
    let server = fleet_server(10);
    let mut a = Node::join(connect(&server), "a", TTL).unwrap();
    a.tick().unwrap();
    assert_eq!(a.held().len(), 10);
    let mut b = Node::join(connect(&server), "b", TTL).unwrap();
    b.tick().unwrap(); // alive, but every shard is a's
    assert_eq!(b.held().len(), 0);
    let change = a.tick().unwrap(); // a sees two live nodes: hands back half
    assert_eq!(change.released.len(), 5);
    b.tick().unwrap();
    assert_eq!((a.held().len(), b.held().len()), (5, 5));

    b.leave().unwrap();
    let change = a.tick().unwrap();
    assert_eq!(change.acquired.len(), 5, "no wait for b's TTL: {change:?}");
    assert_eq!(a.held().len(), 10);
}

#[test]
fn bad_nodes_are_refused() {
    let server = fleet_server(1);
    assert!(matches!(
        Node::join(connect(&server), "", TTL),
        Err(FleetError::Invalid(_))
    ));
    assert!(matches!(
        Node::join(connect(&server), "a", Duration::ZERO),
        Err(FleetError::Invalid(_))
    ));
}

#[test]
fn the_near_window_holds_what_falls_due_within_it_and_only_for_the_owner() {
    let server = fleet_server(4);
    let mut a = Node::join(connect(&server), "a", TTL).unwrap();
    a.tick().unwrap();
    let now = now_ms();
    let mut db = connect(&server);
    for (key, due) in [(1, now + 1_000), (2, now + 30_000), (3, now + 120_000)] {
        add_charge(&mut db, 4, key, due);
    }
    let shards = held(&a);
    let window = load_window(a.client(), "a", &shards, now + 60_000, 100).unwrap();
    let keys: Vec<u64> = window.iter().map(|t| t.key).collect();
    assert_eq!(keys, vec![1, 2], "due within 60 s, earliest first");
    let later = load_window(a.client(), "a", &shards, now + 180_000, 100).unwrap();
    assert_eq!(later.len(), 3, "the rest pages in as time moves");

    a.leave().unwrap();
    let mut b = Node::join(connect(&server), "b", TTL).unwrap();
    b.tick().unwrap();
    let stale = load_window(b.client(), "a", &shards, now + 60_000, 100);
    assert!(matches!(stale, Err(FleetError::Fenced { .. })), "{stale:?}");
}

/// An acknowledgement folded into a claim (`ack_and_claim`) is fenced with it: a node whose
/// lease moved on neither acknowledges nor claims, and an ack under a lease it does not
/// claim under is refused before anything is written.
#[test]
fn an_ack_folded_into_a_claim_is_fenced_with_it() {
    let server = fleet_server(1);
    let ttl = Duration::from_secs(2);
    let mut db = connect(&server);
    let mut a = Node::join(connect(&server), "a", ttl).unwrap();
    a.tick().unwrap();
    for key in 1..=3 {
        add_charge(&mut db, 1, key, now_ms() - 10 + key as i64);
    }
    let stale = held(&a);
    let first = claim_due(a.client(), "a", &stale, now_ms(), 1).unwrap();
    assert_eq!(first.len(), 1);
    let stray = FleetToken {
        shard_epoch: 99,
        ..first[0].token.clone()
    };
    let refused = ack_and_claim(a.client(), "a", &stale, &[stray], Claim::each(now_ms(), 10));
    assert!(
        matches!(refused, Err(FleetError::Invalid(_))),
        "{refused:?}"
    );
    assert_eq!(rows(&mut db), (2, 1), "the stray ack wrote something");

    std::thread::sleep(ttl * 2);
    let mut b = Node::join(connect(&server), "b", TTL).unwrap();
    assert_eq!(b.tick().unwrap().acquired, vec![(0, 2)]);
    let late = [first[0].token.clone()];
    let refused = ack_and_claim(a.client(), "a", &stale, &late, Claim::each(now_ms(), 10));
    assert_eq!(refused, Err(FleetError::Fenced { shard: 0, epoch: 1 }));
    assert_eq!(rows(&mut db), (2, 1), "a fenced node acked or claimed");

    let b_held = held(&b);
    let again = take_over_fires(b.client(), "b", 0, 2).unwrap();
    let tokens = [again[0].token.clone()];
    let (acked, fires) =
        ack_and_claim(b.client(), "b", &b_held, &tokens, Claim::each(now_ms(), 10)).unwrap();
    assert_eq!((acked, fires.len()), (1, 2));
    assert_eq!(
        rows(&mut db),
        (0, 2),
        "b's two claims are its unacknowledged fires"
    );
}

/// (timers, unacknowledged fires) stored.
fn rows(db: &mut postgres::Client) -> (i64, i64) {
    let row = db
        .query_one(
            "SELECT (SELECT count(*) FROM tw_fleet_timers), (SELECT count(*) FROM tw_fleet_fires)",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

//! Answers to attempts given up as unanswered (`Resend::on_late_outcome`):
//! a late command reply completes the operation, a late `SessionOk` opens
//! the session.

use super::*;

/// Asks `resend` for its next request at `now` with `session` not open:
/// an opening, to one of three nodes.
fn opening(resend: &mut Resend, session: &Session, now: TimeMicros, rng: &mut StdRng) {
    let placement = Placement {
        keyspace: None,
        keys: Keys::All,
    };
    let nodes = [NodeId(1), NodeId(2), NodeId(3)];
    let request = resend
        .next_request(session, now, &map_v1(), &placement, &nodes, &[], rng)
        .unwrap();
    assert!(matches!(request, Request::OpenSession { .. }));
}

#[test]
fn a_late_reply_to_an_earlier_attempt_completes_the_operation() {
    let mut rng = StdRng::seed_from_u64(12);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    let now = TimeMicros(2 * SECOND_MICROS);
    resend.on_outcome::<u32>(Outcome::NoAnswer("timeout".into()), &mut session, now);
    let until = resend.pause(now).expect("before the deadline");
    command(&mut resend, &session, until, &map_v1(), &mut rng);
    assert!(resend
        .on_late_outcome::<u32>(Outcome::Behind("old".into()), &mut session, until)
        .is_none());
    assert!(resend.in_flight().is_some());
    assert!(matches!(
        resend.on_late_outcome(Outcome::Done(5u32), &mut session, until),
        Some(Next::Done(5))
    ));
    assert!(resend.in_flight().is_none());
}

/// `amulet-sim --dmap --seed 9001528`: after a heal the global stream
/// ordered each opening later than an attempt's timeout.
#[test]
fn a_late_session_opening_opens_the_session_and_the_operation_goes_on() {
    let mut rng = StdRng::seed_from_u64(13);
    let mut session = Session::with_id(SessionId(7));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    let first = TimeMicros(10);
    opening(&mut resend, &session, first, &mut rng);
    let given_up = TimeMicros(2 * SECOND_MICROS);
    resend.on_outcome::<u32>(Outcome::NoAnswer("timeout".into()), &mut session, given_up);
    // Pausing, nothing in flight: the late answer opens the session and
    // the operation goes on at once.
    let late = TimeMicros(given_up.0 + 1);
    assert!(matches!(
        resend.on_late_outcome::<u32>(Outcome::SessionOk, &mut session, late),
        Some(Next::Continue)
    ));
    assert!(!session.needs_opening(late, timing().session_lease_micros));
    // The lease counts from the first opening, not from the answer.
    let lease = timing().session_lease_micros;
    assert!(session.needs_opening(TimeMicros(first.0 + lease / 2 + 1), lease));
    // Once open, another late opening is no news.
    assert!(resend
        .on_late_outcome::<u32>(Outcome::SessionOk, &mut session, late)
        .is_none());
}

#[test]
fn a_late_session_opening_with_another_opening_in_flight_leaves_that_one_to_answer() {
    let mut rng = StdRng::seed_from_u64(14);
    let mut session = Session::with_id(SessionId(8));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    opening(&mut resend, &session, TimeMicros(0), &mut rng);
    let given_up = TimeMicros(2 * SECOND_MICROS);
    resend.on_outcome::<u32>(Outcome::NoAnswer("timeout".into()), &mut session, given_up);
    let until = resend.pause(given_up).expect("before the deadline");
    opening(&mut resend, &session, until, &mut rng);
    assert!(resend
        .on_late_outcome::<u32>(Outcome::SessionOk, &mut session, until)
        .is_none());
    assert!(!session.needs_opening(until, timing().session_lease_micros));
    assert!(matches!(
        resend.in_flight(),
        Some(Request::OpenSession { .. })
    ));
    // The opening in flight going unanswered is no news now.
    assert!(matches!(
        resend.on_outcome::<u32>(Outcome::NoAnswer("timeout".into()), &mut session, until),
        Next::Continue
    ));
}

#[test]
fn a_late_session_opening_before_any_opening_is_ignored() {
    let mut rng = StdRng::seed_from_u64(15);
    let mut session = open_session(TimeMicros(0));
    let mut resend = Resend::new(TimeMicros(0), &timing(), false);
    command(&mut resend, &session, TimeMicros(0), &map_v1(), &mut rng);
    session.expired();
    assert!(resend
        .on_late_outcome::<u32>(Outcome::SessionOk, &mut session, TimeMicros(1))
        .is_none());
    assert!(session.needs_opening(TimeMicros(1), timing().session_lease_micros));
}

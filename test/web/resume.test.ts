import { describe, expect, it } from 'vitest';
import {
  CATCH_UP_LIMIT_MS,
  comparePositions,
  EVENTS_EXPIRED,
  isEventsExpired,
  ResumableSubscription,
  ResumeState,
  type NextPayload,
} from '../../web/resume.js';

const event = (position: string, data: Record<string, unknown> = { n: position }, replayed = false): NextPayload => ({
  data,
  extensions: { position, ...(replayed ? { replayed: true } : {}) },
});
const caughtUp = (position: string, replayed: number): NextPayload => ({ extensions: { position, caughtUp: { replayed } } });

describe('the dashboard’s resumption of its subscriptions', () => {
  it('orders positions as two numbers, not as text', () => {
    expect(comparePositions('9-0', '10-0')).toBeLessThan(0);
    expect(comparePositions('1764284423123-2', '1764284423123-10')).toBeLessThan(0);
    expect(comparePositions('1764284423124-0', '1764284423123-99')).toBeGreaterThan(0);
    expect(comparePositions('5-5', '5-5')).toBe(0);
  });

  it('subscribes the first time without after, and keeps the last position it received in the payload graphql-ws sends again', () => {
    const subscription = new ResumableSubscription('cardAuthorizations', 'subscription { x }');
    expect(subscription.payload).toEqual({ query: 'subscription { x }' });
    expect(subscription.receive(event('100-0'))).toMatchObject({ kind: 'event', position: '100-0', replayed: false, resumeFailed: false });
    expect(subscription.receive(event('100-1'))).toMatchObject({ kind: 'event', position: '100-1' });
    // A server without positions: the event still applies, with none.
    expect(new ResumableSubscription('s', 'subscription { x }').receive({ data: { n: 1 } })).toMatchObject({
      kind: 'event',
      position: null,
    });
    expect(subscription.position).toBe('100-1');
    expect(subscription.payload).toEqual({ query: 'subscription { x }', extensions: { after: '100-1' } });
  });

  it('ignores a payload without data and an event at or before the last position (delivery is at least once)', () => {
    const subscription = new ResumableSubscription('s', 'subscription { x }');
    subscription.receive(event('10-0'));
    expect(subscription.receive({ extensions: { position: '11-0' } })).toEqual({ kind: 'ignore' });
    expect(subscription.receive({ data: null })).toEqual({ kind: 'ignore' });
    expect(subscription.receive(event('10-0'))).toEqual({ kind: 'ignore' });
    expect(subscription.receive(event('9-7'))).toEqual({ kind: 'ignore' });
    expect(subscription.receive(event('10-1'))).toMatchObject({ kind: 'event' });
    // An event the gateway could not resolve for this subscriber: its errors, nothing to apply.
    expect(subscription.receive({ errors: [{ message: 'no' }], extensions: { position: '12-0' } })).toEqual({
      kind: 'errors',
      errors: [{ message: 'no' }],
    });
  });

  it('after a reconnect, resubscribes each subscription after its last position, shows catching up, then live with the events caught up', () => {
    const links = new ResumableSubscription('paymentLinkStatusChanged', 'subscription { a }');
    const cards = new ResumableSubscription('cardAuthorizations', 'subscription { b }');
    const state = new ResumeState([links, cards]);
    expect(state.text()).toBe('Connecting…');
    expect(state.connected(1_000)).toEqual({ reload: false });
    expect(state.text()).toBe('Live');
    links.receive(event('200-0'));
    cards.receive(event('201-0'));
    state.closed();
    expect(state.phase()).toBe('reconnecting');
    expect(state.text()).toBe('Reconnecting…');

    expect(state.connected(5_000)).toEqual({ reload: false });
    expect(links.payload.extensions).toEqual({ after: '200-0' });
    expect(cards.payload.extensions).toEqual({ after: '201-0' });
    expect(state.text()).toBe('Catching up…');
    // A repeat of what it had is dropped; what it missed is applied.
    expect(links.receive(event('200-0', {}, true))).toEqual({ kind: 'ignore' });
    expect(links.receive(event('202-0', { n: 1 }, true))).toMatchObject({ kind: 'event', replayed: true, data: { n: 1 } });
    expect(links.receive(event('203-0', { n: 2 }, true))).toMatchObject({ kind: 'event', replayed: true });
    expect(links.receive(caughtUp('203-0', 2))).toEqual({ kind: 'caught-up', replayed: 2 });
    state.caughtUpWith(2);
    // One subscription is still catching up.
    expect(state.text()).toBe('Catching up… 2 events so far');
    expect(cards.receive(event('204-0', {}, true))).toMatchObject({ kind: 'event', replayed: true });
    expect(cards.receive(caughtUp('205-0', 1))).toEqual({ kind: 'caught-up', replayed: 1 });
    state.caughtUpWith(1);
    expect(state.phase()).toBe('live');
    expect(state.text()).toBe('Live · caught up 3 events');
    expect(cards.payload.extensions).toEqual({ after: '205-0' });
    // Live again: the next event is neither a repeat nor replayed.
    expect(cards.receive(event('206-0'))).toMatchObject({ kind: 'event', replayed: false, resumeFailed: false });
    expect(state.text()).toBe('Live · caught up 3 events');
  });

  it('reads the state again when a subscription had received nothing before the connection dropped', () => {
    const quiet = new ResumableSubscription('kycApplicationCompleted', 'subscription { k }');
    const busy = new ResumableSubscription('cardAuthorizations', 'subscription { c }');
    const state = new ResumeState([quiet, busy]);
    state.connected(0);
    busy.receive(event('1-0'));
    state.closed();
    expect(state.connected(10)).toEqual({ reload: true });
    expect(quiet.payload.extensions).toBeUndefined();
    expect(busy.payload.extensions).toEqual({ after: '1-0' });
    busy.receive(caughtUp('1-0', 0));
    state.caughtUpWith(0);
    state.stateReloaded();
    expect(state.text()).toBe('Live · state reloaded');
  });

  it('on EVENTS_EXPIRED, says so, and subscribes afresh without after once restarted', () => {
    const subscription = new ResumableSubscription('s', 'subscription { x }');
    subscription.receive(event('7-0'));
    expect(isEventsExpired([{ message: 'gone', extensions: { code: EVENTS_EXPIRED } }])).toBe(true);
    expect(isEventsExpired([{ message: 'refused', extensions: { code: 'FORBIDDEN' } }])).toBe(false);
    expect(isEventsExpired(new Error('socket'))).toBe(false);
    expect(subscription.end([{ message: 'gone', extensions: { code: EVENTS_EXPIRED } }])).toBe('expired');
    expect(subscription.isEnded).toBe(true);
    // An ended subscription is not resumed: graphql-ws does not send it again.
    expect(subscription.resume()).toBe('ended');
    subscription.restart();
    expect(subscription.payload).toEqual({ query: 'subscription { x }' });
    expect(subscription.position).toBeNull();
    expect(subscription.receive(event('3-0'))).toMatchObject({ kind: 'event' });
    expect(new ResumableSubscription('t', 'q').end([{ message: 'refused' }])).toBe('failed');
  });

  it('stops waiting when the server goes on live without replaying, or sends no caughtUp in time, and asks for a reload', () => {
    const subscription = new ResumableSubscription('s', 'subscription { x }');
    const state = new ResumeState([subscription]);
    state.connected(0);
    subscription.receive(event('1-0'));
    state.closed();
    state.connected(1_000);
    expect(subscription.receive(event('2-0'))).toMatchObject({ kind: 'event', replayed: false, resumeFailed: true });
    expect(state.phase()).toBe('live');

    state.closed();
    state.connected(20_000);
    expect(state.phase()).toBe('catching up');
    expect(state.catchUpOverdue(20_000 + CATCH_UP_LIMIT_MS - 1)).toBe(false);
    expect(state.catchUpOverdue(20_000 + CATCH_UP_LIMIT_MS)).toBe(true);
    expect(subscription.isCatchingUp).toBe(false);
    state.stateReloaded();
    expect(state.text()).toBe('Live · state reloaded');
    expect(state.catchUpOverdue(60_000)).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { achRows, AuthorizationTally, FailingDeliveries, LinkStatusCounts, statusAt, type AuthorizationRow } from '../../web/state.js';

const AS_OF = '2026-11-27T12:00:00.000Z';
const after = (seconds: number) => new Date(Date.parse(AS_OF) + seconds * 1000).toISOString();

const message = (messageId: string, dtsReceived: string, overrides: Partial<AuthorizationRow> = {}) => ({
  messageId,
  approved: true,
  responseCode: '00',
  decidedBy: 'aggregator',
  reason: 'Approved by the aggregator.',
  dtsReceived,
  ...overrides,
});
const blocked = {
  approved: false,
  responseCode: '62',
  decidedBy: 'card',
  reason: 'The card is off (blocked): no transaction is authorized.',
};

describe("the dashboard's state, kept current by events", () => {
  it('adds to the approvals and declines of the summary each message received after it, once, and recomputes the rate', () => {
    const tally = new AuthorizationTally({
      asOf: AS_OF,
      approved: 1,
      declined: 1,
      declineReasons: [{ ...blocked, count: 1 }],
    });
    expect([tally.total, tally.approvalRate]).toEqual([2, 50]);
    // Received before the summary was counted: already in it.
    expect(tally.apply(message('m0', after(-1)))).toBe(false);
    expect(tally.apply(message('m0', AS_OF))).toBe(false);
    expect(tally.apply(message('m1', after(1)))).toBe(true);
    expect(tally.apply(message('m1', after(1)))).toBe(false);
    expect(tally.apply(message('m2', after(2), blocked))).toBe(true);
    expect(
      tally.apply(
        message('m3', after(3), {
          approved: false,
          responseCode: '05',
          decidedBy: 'aggregator',
          reason: 'Declined by the aggregator (05).',
        }),
      ),
    ).toBe(true);
    expect([tally.approved, tally.declined, tally.total, tally.approvalRate]).toEqual([2, 3, 5, 40]);
    expect(tally.declineReasons.map((r) => [r.responseCode, r.count])).toEqual([
      ['62', 2],
      ['05', 1],
    ]);
  });

  it('has no approval rate for an empty window, and rounds it to two decimals', () => {
    const tally = new AuthorizationTally({ asOf: AS_OF, approved: 0, declined: 0, declineReasons: [] });
    expect(tally.approvalRate).toBeNull();
    tally.apply(message('a', after(1)));
    tally.apply(message('b', after(1)));
    tally.apply(message('c', after(1), blocked));
    expect(tally.approvalRate).toBe(66.67);
  });

  it("reads a link's status at a moment from its history", () => {
    const history = [
      { status: 'Initiated', dtsCreatedAt: after(-60) },
      { status: 'Sent', dtsCreatedAt: after(-30) },
      { status: 'Processing', dtsCreatedAt: after(10) },
    ];
    expect(statusAt(history, Date.parse(after(-90)))).toBeNull();
    expect(statusAt(history, Date.parse(AS_OF))).toBe('Sent');
    expect(statusAt(history, Date.parse(after(60)))).toBe('Processing');
  });

  it('moves a link between statuses once, from where the counts had it, whatever the event was resolved as', () => {
    const counts = new LinkStatusCounts({
      asOf: AS_OF,
      statuses: [
        { status: 'Initiated', count: 2 },
        { status: 'Sent', count: 1 },
        { status: 'Processing', count: 0 },
      ],
    });
    const at = (...steps: Array<[string, number]>) => steps.map(([status, seconds]) => ({ status, dtsCreatedAt: after(seconds) }));
    // Sent then Processing soon after: both events were resolved after the second change.
    const link = {
      svcTransactionId: 'l1',
      status: 'Processing',
      statusChangeHistory: at(['Initiated', -60], ['Sent', 5], ['Processing', 6]),
    };
    expect(counts.apply(link)).toBe(true);
    expect(counts.apply(link)).toBe(false);
    expect(counts.statuses).toEqual([
      { status: 'Initiated', count: 1 },
      { status: 'Sent', count: 1 },
      { status: 'Processing', count: 1 },
    ]);
    // A link created after the counts: counted only where it is now.
    expect(counts.apply({ svcTransactionId: 'l2', status: 'Initiated', statusChangeHistory: at(['Initiated', 30]) })).toBe(true);
    expect(
      counts.apply({ svcTransactionId: 'l2', status: 'Cancelled', statusChangeHistory: at(['Initiated', 30], ['Cancelled', 40]) }),
    ).toBe(true);
    expect(counts.statuses).toEqual([
      { status: 'Initiated', count: 1 },
      { status: 'Sent', count: 1 },
      { status: 'Processing', count: 1 },
      { status: 'Cancelled', count: 1 },
    ]);
    expect(counts.total).toBe(4);
  });

  it('lists deliveries failing (given up, paused, or pending after a failed attempt) and drops one once delivered', () => {
    const row = {
      source: 'merchant' as const,
      kind: 'webhook',
      eventType: 'payment_link.sent',
      to: 'https://shop.example/hook',
      lastError: 'HTTP 500',
      svcMerchantId: 'shop',
    };
    const failing = new FailingDeliveries([{ ...row, deliveryId: 'd1', status: 'failed' }]);
    failing.apply({ ...row, deliveryId: 'd2', status: 'pending', attempts: [{ outcome: 'failed' }] });
    failing.apply({ ...row, deliveryId: 'd3', status: 'paused', attempts: [] });
    failing.apply({ ...row, deliveryId: 'd4', status: 'delivered', attempts: [{ outcome: 'delivered' }] });
    expect(failing.list.map((d) => d.deliveryId)).toEqual(['d1', 'd2', 'd3']);
    failing.apply({
      ...row,
      deliveryId: 'd2',
      status: 'delivered',
      lastError: null,
      attempts: [{ outcome: 'failed' }, { outcome: 'delivered' }],
    });
    expect(failing.list.map((d) => d.deliveryId)).toEqual(['d1', 'd3']);
  });

  it('checks each ACH return rate against its Nacha threshold, at or above it being out of compliance', () => {
    expect(
      achRows({ unAuthorizedRate: 0.5, unAuthorizedDaysOver: 4, adminRate: 2.99, adminDaysOver: 0, totalRate: 15.2, totalDaysOver: 60 }),
    ).toEqual([
      { label: 'Unauthorized', rate: 0.5, threshold: 0.5, over: true, daysOver: 4 },
      { label: 'Administrative', rate: 2.99, threshold: 3, over: false, daysOver: 0 },
      { label: 'Overall', rate: 15.2, threshold: 15, over: true, daysOver: 60 },
    ]);
  });
});

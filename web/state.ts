// The dashboard's state between two reads: figures read through the queries, then kept current by
// the events that arrive. Each model counts an event once, and only when the figures it starts
// from did not count it already (they say when they were counted: `asOf`). No DOM here.

/** A decided card message, as the dashboard's queries and subscriptions select it. */
export interface AuthorizationRow {
  messageId: string;
  messageType: string;
  approved: boolean;
  responseCode: string;
  decidedBy: string;
  reason: string;
  amount: string;
  currency: string;
  dtsReceived: string;
  SvcCardId: string;
  card?: { name: string | null; lastFour: string } | null;
}

/** One decline reason of the summary. */
export interface DeclineReason {
  responseCode: string;
  decidedBy: string;
  reason: string;
  count: number;
}

/** `cardAuthorizationSummary` as the dashboard selects it. */
export interface AuthorizationFigures {
  asOf: string;
  approved: number;
  declined: number;
  declineReasons: DeclineReason[];
}

/** Approved messages as a percentage of all, to two decimals (as the summary computes it); null for none. */
function approvalRate(approved: number, total: number): number | null {
  return total === 0 ? null : Math.round((approved / total) * 10_000) / 100;
}

/** The approvals and declines of the window, as counted at `asOf` and then by each message received after it. */
export class AuthorizationTally {
  private readonly asOf: number;
  private readonly counted = new Set<string>();
  private readonly reasons = new Map<string, DeclineReason>();
  private approvedCount: number;

  constructor(figures: AuthorizationFigures) {
    this.asOf = Date.parse(figures.asOf);
    this.approvedCount = figures.approved;
    for (const reason of figures.declineReasons) this.reasons.set(reasonKey(reason), { ...reason });
  }

  /** Counts a message received after the figures, once; false when they hold it already. */
  apply(message: Pick<AuthorizationRow, 'messageId' | 'approved' | 'responseCode' | 'decidedBy' | 'reason' | 'dtsReceived'>): boolean {
    if (Date.parse(message.dtsReceived) <= this.asOf || this.counted.has(message.messageId)) return false;
    this.counted.add(message.messageId);
    if (message.approved) {
      this.approvedCount += 1;
      return true;
    }
    const key = reasonKey(message);
    const reason = this.reasons.get(key) ?? {
      responseCode: message.responseCode,
      decidedBy: message.decidedBy,
      reason: message.reason,
      count: 0,
    };
    reason.count += 1;
    this.reasons.set(key, reason);
    return true;
  }

  get approved(): number {
    return this.approvedCount;
  }

  get declined(): number {
    let sum = 0;
    for (const reason of this.reasons.values()) sum += reason.count;
    return sum;
  }

  get total(): number {
    return this.approved + this.declined;
  }

  get approvalRate(): number | null {
    return approvalRate(this.approved, this.total);
  }

  /** Most frequent first, as the summary orders them. */
  get declineReasons(): DeclineReason[] {
    return [...this.reasons.values()].sort(
      (a, b) => b.count - a.count || a.responseCode.localeCompare(b.responseCode) || a.reason.localeCompare(b.reason),
    );
  }
}

const reasonKey = (reason: Pick<DeclineReason, 'responseCode' | 'decidedBy' | 'reason'>) =>
  JSON.stringify([reason.responseCode, reason.decidedBy, reason.reason]);

/** A payment link as the dashboard's subscription selects it. */
export interface LinkChange {
  svcTransactionId: string;
  status: string;
  statusChangeHistory: ReadonlyArray<{ status: string; dtsCreatedAt: string }>;
}

/** The link's status at a moment, by its history (oldest first); null when it did not exist yet. */
export function statusAt(history: LinkChange['statusChangeHistory'], at: number): string | null {
  let status: string | null = null;
  for (const change of history) {
    if (Date.parse(change.dtsCreatedAt) > at) break;
    status = change.status;
  }
  return status;
}

/** Payment links by status, as counted at `asOf`, then moved by each status change. */
export class LinkStatusCounts {
  private readonly asOf: number;
  private readonly counts = new Map<string, number>();
  /** The status each link changed since is counted under now. */
  private readonly current = new Map<string, string>();

  constructor(figures: { asOf: string; statuses: ReadonlyArray<{ status: string; count: number }> }) {
    this.asOf = Date.parse(figures.asOf);
    for (const { status, count } of figures.statuses) this.counts.set(status, count);
  }

  /**
   * Moves a link from the status it is counted under to the one it has now; false when that is
   * where it is counted. The first time a link is seen, its history says where the figures counted
   * it (nowhere, when it was created after them), so an event the gateway resolved after a later
   * change still moves it once, from the right status.
   */
  apply(link: LinkChange): boolean {
    const from = this.current.has(link.svcTransactionId)
      ? this.current.get(link.svcTransactionId)!
      : statusAt(link.statusChangeHistory, this.asOf);
    this.current.set(link.svcTransactionId, link.status);
    if (from === link.status) return false;
    if (from !== null) this.counts.set(from, Math.max(0, (this.counts.get(from) ?? 0) - 1));
    this.counts.set(link.status, (this.counts.get(link.status) ?? 0) + 1);
    return true;
  }

  /** Every status, in the order the figures gave them (a status they lacked last). */
  get statuses(): Array<{ status: string; count: number }> {
    return [...this.counts].map(([status, count]) => ({ status, count }));
  }

  get total(): number {
    let sum = 0;
    for (const count of this.counts.values()) sum += count;
    return sum;
  }
}

/** A webhook delivery as the dashboard shows it. */
export interface DeliveryRow {
  deliveryId: string;
  /** A merchant's payment-link or ACH webhook or email, or the aggregator's own card advice (a webhook). */
  source: 'merchant' | 'card';
  /** webhook or email. */
  kind: string;
  eventType: string;
  to: string;
  status: string;
  lastError: string | null;
  svcMerchantId: string | null;
}

/** Deliveries given up (failed), paused behind a disabled endpoint, or pending after a failed attempt. */
export class FailingDeliveries {
  private readonly rows = new Map<string, DeliveryRow>();

  constructor(rows: readonly DeliveryRow[]) {
    for (const row of rows) this.rows.set(row.deliveryId, row);
  }

  /** A delivery attempt's event: a failing delivery is listed (or updated), one delivered leaves the list. */
  apply(delivery: DeliveryRow & { attempts: ReadonlyArray<{ outcome: string }> }): void {
    const { attempts, ...row } = delivery;
    const failing =
      row.status === 'failed' || row.status === 'paused' || (row.status === 'pending' && attempts.at(-1)?.outcome === 'failed');
    if (failing) this.rows.set(row.deliveryId, row);
    else this.rows.delete(row.deliveryId);
  }

  get list(): DeliveryRow[] {
    return [...this.rows.values()];
  }
}

/** The Nacha return-rate thresholds the dashboard checks the latest report against: at or above one is out of compliance. */
const ACH_THRESHOLDS = [
  { label: 'Unauthorized', rate: 'unAuthorizedRate', daysOver: 'unAuthorizedDaysOver', threshold: 0.5 },
  { label: 'Administrative', rate: 'adminRate', daysOver: 'adminDaysOver', threshold: 3 },
  { label: 'Overall', rate: 'totalRate', daysOver: 'totalDaysOver', threshold: 15 },
] as const;

/** The figures of an ACH return-rate report the dashboard reads. */
export type AchReport = Record<(typeof ACH_THRESHOLDS)[number]['rate'] | (typeof ACH_THRESHOLDS)[number]['daysOver'], number>;

/** Each return rate of the report against its threshold, with the days of the last 60 it was out of compliance. */
export function achRows(report: AchReport): Array<{ label: string; rate: number; threshold: number; over: boolean; daysOver: number }> {
  return ACH_THRESHOLDS.map((row) => ({
    label: row.label,
    rate: report[row.rate],
    threshold: row.threshold,
    over: report[row.rate] >= row.threshold,
    daysOver: report[row.daysOver],
  }));
}

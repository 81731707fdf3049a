import type { Collection } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import type { ServiceConfig } from '../../../../platform/runtime/config-slices.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { addressGroup } from '../../../../platform/http/address-group.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import {
  holds,
  liveLeases,
  newLease,
  secondsUntilFirstLapse,
  SlotsTaken,
  transact,
  waitForSlot,
  without,
  type Change,
  type Lease,
} from '../attempt-slots.js';
import type { KnownSourceDocument, LockoutDocument } from './datasource.js';

/** An actor's state once lapsed failures, locks and leases are dropped. */
type State = Pick<LockoutDocument, 'failures' | 'dtsLastFailure' | 'lockedUntil'> & { leases: Lease[] };

/**
 * How the audit log names an actor, asked only when a lock or a refusal is recorded: a caller
 * whose actor may hold a credential (a test-channel device tag, a password typed as a user name)
 * names it by a hash.
 */
export type AuditName = () => Promise<string>;

type Reservation = { kind: 'reserved'; lease: Lease } | { kind: 'locked'; lockedUntil: Date };
/** The actor's failures from all addresses are at their bound until `retryAfterSeconds` pass without one. */
type Exhausted = { kind: 'exhausted'; retryAfterSeconds: number };

/** The two counts a check is held against: the actor's from the caller's address group, and the actor's from everywhere. */
interface Rule {
  limit: number;
  /** Failures are forgotten once this long passes without one. */
  forgetMs: number;
  /** Whether reaching the limit locks (the per-address count) or only refuses unknown addresses (the account-wide count). */
  locks: boolean;
}

/** The document id of an actor's count from one address group (an address group holds no space). */
const sourceKey = (actor: string, group: string) => `from:${group} ${actor}`;

/**
 * Failed credential checks per actor (a user name, a device, a prospect, an aggregator login) and
 * what they lead to, counted twice so that no caller can lock an actor out for everyone:
 *
 * - per actor and address group (the caller's signed client address, an IPv6 address by its
 *   /64): the failure that reaches `loginMaxFailures` within one lock period locks the actor for
 *   that address group only, for `lockPeriodSeconds`; the right password from there is refused
 *   too (ACTOR_LOCKED), from elsewhere it is not;
 * - per actor across all addresses: once `loginAccountMaxFailures` failures are counted (they
 *   are forgotten `loginAccountWindowSeconds` after the last one), a check from an address group
 *   the actor never logged in from (within `loginKnownSourceDays`) is refused with
 *   TOO_MANY_ATTEMPTS and Retry-After; an address group it logged in from is still checked.
 *
 * Only failures count: a check reserves a slot (a lease) in both counts before the credential is
 * looked at, and settles it after: a success frees the slots, clears the address group's failures
 * and remembers the address group; a failure turns each slot into a failure. Failures plus checks
 * in flight never exceed a limit, so parallel guesses get no more checks than sequential ones; an
 * attempt that finds every slot taken waits for one (correct credentials in flight free theirs at
 * once) and is refused with TOO_MANY_ATTEMPTS, not a lock, when none frees for `SLOT_WAIT_MS`
 * (see `waitForSlot`). Each count lives in one document, written only by single-document
 * conditional writes, so every replica of the subgraph shares it.
 */
export class Lockouts {
  private readonly source: string;
  private readonly perSource: Rule;
  private readonly perAccount: Rule;

  constructor(
    private readonly lockouts: Collection<LockoutDocument>,
    private readonly knownSources: Collection<KnownSourceDocument>,
    private readonly config: ServiceConfig<'user'>,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
    clientIp: string | null,
  ) {
    // Without a signed address (an internal caller), every such caller shares one group.
    this.source = clientIp ? addressGroup(clientIp) : 'unknown';
    this.perSource = { limit: config.loginMaxFailures, forgetMs: config.lockPeriodSeconds * 1000, locks: true };
    this.perAccount = { limit: config.loginAccountMaxFailures, forgetMs: config.loginAccountWindowSeconds * 1000, locks: false };
  }

  /**
   * Reserves one credential check of `actor` from the caller's address group. Refuses with
   * ACTOR_LOCKED when the actor is locked for this address group or for everyone (also when it
   * becomes locked during the wait), and with TOO_MANY_ATTEMPTS (Retry-After) when no slot frees
   * within the wait or the actor's failures from all addresses are at their bound and this
   * address group is not one it logged in from. The caller settles the attempt it gets, and
   * releases it in a `finally` in any case.
   */
  async reserve(actor: string, auditName: AuditName = async () => actor): Promise<Attempt> {
    const sourceId = sourceKey(actor, this.source);
    const sourceLease = await this.reserveIn(sourceId, this.perSource, auditName);
    let accountLease: Lease | null;
    try {
      accountLease = await this.reserveAccount(actor, auditName);
    } catch (error) {
      await this.settleIn(sourceId, this.perSource, sourceLease, 'released', auditName).catch(() => undefined);
      throw error;
    }
    return new Attempt(this, actor, sourceLease, accountLease, auditName);
  }

  /** Refuses a locked actor without counting an attempt (for calls that check no credential). */
  async refuseIfLocked(actor: string): Promise<void> {
    const now = new Date();
    for (const [id, rule] of [
      [actor, this.perAccount],
      [sourceKey(actor, this.source), this.perSource],
    ] as const) {
      const lockedUntil = this.current(await this.lockouts.findOne({ _id: id }), now, rule).lockedUntil;
      if (lockedUntil) throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${lockedUntil.toISOString()}.`);
    }
  }

  /** Locks an actor at once, for every address (a registration that lacks required data: only its own token can do that). */
  async lockNow(actor: string): Promise<void> {
    const lockedUntil = await transact<LockoutDocument, Date>(this.lockouts, actor, (document, now) => {
      const until = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
      return { change: { kind: 'write', set: { ...this.current(document, now, this.perAccount), lockedUntil: until } }, result: until };
    });
    this.logger.warn('actor locked', { reason: 'required registration data missing' });
    await this.audit.record(
      'ACTOR_LOCKED',
      { type: 'actor', id: actor },
      { reason: 'required registration data missing', lockedUntil: lockedUntil.toISOString() },
    );
  }

  /** Settles a check in both counts: `failed` counts a failure (and may lock), `succeeded` clears the address group's failures and remembers it, `released` only frees the slots. */
  async settle(
    actor: string,
    sourceLease: Lease,
    accountLease: Lease | null,
    outcome: 'succeeded' | 'failed' | 'released',
    auditName: AuditName,
  ): Promise<void> {
    await this.settleIn(sourceKey(actor, this.source), this.perSource, sourceLease, outcome, auditName);
    // The account-wide failures stay after a success: the owner logging in must not hand a guesser a fresh budget.
    await this.settleIn(actor, this.perAccount, accountLease, outcome === 'succeeded' ? 'released' : outcome, auditName);
    if (outcome === 'succeeded') {
      const now = new Date();
      const dtsExpiry = new Date(now.getTime() + this.config.loginKnownSourceDays * 24 * 3600_000);
      await this.knownSources.updateOne(
        { _id: `${this.source} ${actor}` },
        { $set: { actor, dtsLastSuccess: now, dtsExpiry } },
        { upsert: true },
      );
      await this.knownSources.deleteMany({ actor, dtsExpiry: { $lte: now } });
    }
  }

  /** Reserves a slot in the actor's count across all addresses; null when the count is full but this address group is known. */
  private async reserveAccount(actor: string, auditName: AuditName): Promise<Lease | null> {
    const reservation = await waitForSlot(() =>
      transact<LockoutDocument, Reservation | Exhausted | SlotsTaken>(this.lockouts, actor, (document, now) => {
        const state = this.current(document, now, this.perAccount);
        if (state.lockedUntil) return { change: { kind: 'keep' }, result: { kind: 'locked', lockedUntil: state.lockedUntil } };
        if (state.failures >= this.perAccount.limit) {
          const lapse = (state.dtsLastFailure?.getTime() ?? now.getTime()) + this.perAccount.forgetMs;
          return {
            change: { kind: 'keep' },
            result: { kind: 'exhausted', retryAfterSeconds: Math.max(1, Math.ceil((lapse - now.getTime()) / 1000)) },
          };
        }
        if (state.failures + state.leases.length >= this.perAccount.limit) {
          return { change: { kind: 'keep' }, result: new SlotsTaken(document?.version, secondsUntilFirstLapse(state.leases, now)) };
        }
        const lease = newLease(now);
        return { change: { kind: 'write', set: { ...state, leases: [...state.leases, lease] } }, result: { kind: 'reserved', lease } };
      }),
    );
    if (reservation instanceof SlotsTaken || reservation.kind === 'exhausted') {
      // An address group the actor logged in from is still checked (its own count still bounds it).
      if (await this.knownSources.findOne({ _id: `${this.source} ${actor}`, dtsExpiry: { $gt: new Date() } }, { projection: { _id: 1 } }))
        return null;
      const { retryAfterSeconds } = reservation;
      this.logger.info('refused: too many failures across addresses');
      await this.audit.record('LOGIN_REFUSED', { type: 'actor', id: await auditName() }, { reason: 'too many failures across addresses' });
      throw appError(ErrorCode.TOO_MANY_ATTEMPTS, `Too many failed attempts of this login; try again in ${retryAfterSeconds} s.`, {
        retryAfterSeconds,
      });
    }
    if (reservation.kind === 'locked') return this.refuseLocked(reservation.lockedUntil, auditName);
    return reservation.lease;
  }

  /** Reserves a slot in one count that locks (the actor's from this address group). */
  private async reserveIn(id: string, rule: Rule, auditName: AuditName): Promise<Lease> {
    const reservation = await waitForSlot(() =>
      transact<LockoutDocument, Reservation | SlotsTaken>(this.lockouts, id, (document, now) => {
        const state = this.current(document, now, rule);
        if (state.lockedUntil) return { change: { kind: 'keep' }, result: { kind: 'locked', lockedUntil: state.lockedUntil } };
        if (state.failures + state.leases.length >= rule.limit) {
          return { change: { kind: 'keep' }, result: new SlotsTaken(document?.version, secondsUntilFirstLapse(state.leases, now)) };
        }
        const lease = newLease(now);
        return { change: { kind: 'write', set: { ...state, leases: [...state.leases, lease] } }, result: { kind: 'reserved', lease } };
      }),
    );
    if (reservation instanceof SlotsTaken) {
      this.logger.info('refused: too many attempts in flight');
      const { retryAfterSeconds } = reservation;
      throw appError(ErrorCode.TOO_MANY_ATTEMPTS, `Too many attempts of this login are in progress; try again in ${retryAfterSeconds} s.`, {
        retryAfterSeconds,
      });
    }
    if (reservation.kind === 'locked') return this.refuseLocked(reservation.lockedUntil, auditName);
    return reservation.lease;
  }

  private async refuseLocked(lockedUntil: Date, auditName: AuditName): Promise<never> {
    this.logger.info('refused: actor locked');
    await this.audit.record('LOGIN_REFUSED', { type: 'actor', id: await auditName() }, { reason: 'locked' });
    throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${lockedUntil.toISOString()}.`);
  }

  /** Settles one count; with no lease (a known address group past the account-wide bound) a failure still counts. */
  private async settleIn(
    id: string,
    rule: Rule,
    lease: Lease | null,
    outcome: 'succeeded' | 'failed' | 'released',
    auditName: AuditName,
  ): Promise<void> {
    const locked = await transact<LockoutDocument, { failures: number; lockedUntil: Date } | null>(this.lockouts, id, (document, now) => {
      const state = this.current(document, now, rule);
      // A lease that lapsed was dropped with its slot; what the check found still counts.
      if ((!lease || !holds(document?.leases, lease)) && outcome === 'released') return { change: { kind: 'keep' }, result: null };
      const next: State = { ...state, leases: lease ? without(state.leases, lease) : state.leases };
      let locks: { failures: number; lockedUntil: Date } | null = null;
      if (outcome === 'succeeded') Object.assign(next, { failures: 0, dtsLastFailure: null });
      if (outcome === 'failed') {
        Object.assign(next, { failures: state.failures + 1, dtsLastFailure: now });
        if (rule.locks && !state.lockedUntil && next.failures >= rule.limit) {
          next.lockedUntil = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
          locks = { failures: next.failures, lockedUntil: next.lockedUntil };
        }
      }
      return { change: this.store(next), result: locks };
    });
    if (locked) {
      this.logger.warn('actor locked for an address group', { failures: locked.failures });
      await this.audit.record(
        'ACTOR_LOCKED',
        { type: 'actor', id: await auditName() },
        { failures: locked.failures, lockedUntil: locked.lockedUntil.toISOString() },
      );
    }
  }

  /** A count's state at `now`: failures are forgotten `rule.forgetMs` after the last one, and a lock that has passed is dropped. */
  private current(document: LockoutDocument | null, now: Date, rule: Rule): State {
    const state: State = {
      failures: document?.failures ?? 0,
      dtsLastFailure: document?.dtsLastFailure ?? null,
      lockedUntil: document?.lockedUntil ?? null,
      leases: liveLeases(document?.leases, now),
    };
    if (state.lockedUntil && state.lockedUntil.getTime() <= now.getTime()) Object.assign(state, { failures: 0, lockedUntil: null });
    if (!state.lockedUntil && state.dtsLastFailure && state.dtsLastFailure.getTime() < now.getTime() - rule.forgetMs) state.failures = 0;
    // Failures at the limit without a lock (under a lowered limit) lock until they lapse.
    if (rule.locks && !state.lockedUntil && state.dtsLastFailure && state.failures >= rule.limit) {
      state.lockedUntil = new Date(state.dtsLastFailure.getTime() + this.config.lockPeriodSeconds * 1000);
    }
    return state;
  }

  /** The write that stores `state`: none is left for an actor with nothing to remember. */
  private store(state: State): Change<LockoutDocument> {
    if (state.failures === 0 && !state.lockedUntil && state.leases.length === 0) return { kind: 'delete' };
    return { kind: 'write', set: state };
  }
}

/**
 * One reserved credential check. Settle it with `succeeded` (the credential was right) or
 * `failed` (it was wrong); `release` frees the slot without counting (the check did not decide,
 * or a right credential is refused for another reason) and does nothing once settled, so a
 * `finally` can always call it. Only the first settlement counts.
 */
export class Attempt {
  private settled = false;

  constructor(
    private readonly lockouts: Lockouts,
    private readonly actor: string,
    private readonly sourceLease: Lease,
    private readonly accountLease: Lease | null,
    private readonly auditName: AuditName,
  ) {}

  /** The credential was right: frees the slots and clears the actor's failures from this address group. */
  succeeded(): Promise<void> {
    return this.settle('succeeded');
  }

  /** The credential was wrong: counts a failure; the one that reaches the limit locks the actor for this address group. */
  failed(): Promise<void> {
    return this.settle('failed');
  }

  /** Frees the slot without counting anything; when the database does not answer, the lease lapses on its own. */
  async release(): Promise<void> {
    try {
      await this.settle('released');
    } catch {
      // Nothing to do: the lease lapses by itself, and the caller's own error is the one to report.
    }
  }

  private async settle(outcome: 'succeeded' | 'failed' | 'released'): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await this.lockouts.settle(this.actor, this.sourceLease, this.accountLease, outcome, this.auditName);
  }
}

import type { Collection } from 'mongodb';
import type { AuditTrail } from '../../../../platform/security/audit.js';
import type { Config } from '../../../../platform/runtime/config.js';
import { appError, ErrorCode } from '../../../../platform/graphql/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { holds, liveLeases, newLease, secondsUntilFirstLapse, SlotsTaken, transact, waitForSlot, without, type Change, type Lease } from '../attempt-slots.js';
import type { LockoutDocument } from './datasource.js';

/** An actor's state once lapsed failures, locks and leases are dropped. */
type State = Pick<LockoutDocument, 'failures' | 'dtsLastFailure' | 'lockedUntil'> & { leases: Lease[] };

/**
 * How the audit log names an actor, asked only when a lock or a refusal is recorded: a caller
 * whose actor may hold a credential (a test-channel device tag, a password typed as a user name)
 * names it by a hash.
 */
export type AuditName = () => Promise<string>;

type Reservation = { kind: 'reserved'; lease: Lease } | { kind: 'locked'; lockedUntil: Date };

/**
 * Failed credential checks per actor (a user name, a device, a prospect, an aggregator login) and
 * the lock they lead to. Only failures count: a check reserves a slot (a lease) before the
 * credential is looked at, and settles it after: a success frees the slot and clears the
 * failures, a failure turns the slot into a failure, and the failure that reaches
 * `loginMaxFailures` within one lock period locks the actor for `lockPeriodSeconds`. Failures
 * plus checks in flight never exceed the limit, so parallel guesses get no more checks than
 * sequential ones; an attempt that finds every slot taken waits for one (correct credentials in
 * flight free theirs at once) and is refused with TOO_MANY_ATTEMPTS, not a lock, when none
 * frees for `SLOT_WAIT_MS` (see `waitForSlot`). The state lives in one document per actor,
 * written only by single-document conditional writes, so every replica of the subgraph shares it.
 */
export class Lockouts {
  constructor(
    private readonly lockouts: Collection<LockoutDocument>,
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * Reserves one credential check of `actor`. Refuses with ACTOR_LOCKED when the actor is locked
   * (also when it becomes locked during the wait), and with TOO_MANY_ATTEMPTS (Retry-After) when
   * no slot frees within the wait. The caller settles the attempt it gets, and releases it in a
   * `finally` in any case.
   */
  async reserve(actor: string, auditName: AuditName = async () => actor): Promise<Attempt> {
    const reservation = await waitForSlot(
      () =>
        transact<LockoutDocument, Reservation | SlotsTaken>(this.lockouts, actor, (document, now) => {
          const state = this.current(document, now);
          if (state.lockedUntil) return { change: { kind: 'keep' }, result: { kind: 'locked', lockedUntil: state.lockedUntil } };
          if (state.failures + state.leases.length >= this.config.loginMaxFailures) {
            return { change: { kind: 'keep' }, result: new SlotsTaken(document?.version, secondsUntilFirstLapse(state.leases, now)) };
          }
          const lease = newLease(now);
          return { change: { kind: 'write', set: { ...state, leases: [...state.leases, lease] } }, result: { kind: 'reserved', lease } };
        }),
    );
    if (reservation instanceof SlotsTaken) {
      this.logger.info('refused: too many attempts in flight');
      const { retryAfterSeconds } = reservation;
      throw appError(ErrorCode.TOO_MANY_ATTEMPTS, `Too many attempts of this login are in progress; try again in ${retryAfterSeconds} s.`, { retryAfterSeconds });
    }
    if (reservation.kind === 'locked') {
      this.logger.info('refused: actor locked');
      await this.audit.record('LOGIN_REFUSED', { type: 'actor', id: await auditName() }, { reason: 'locked' });
      throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${reservation.lockedUntil.toISOString()}.`);
    }
    return new Attempt(this, actor, reservation.lease, auditName);
  }

  /** Refuses a locked actor without counting an attempt (for calls that check no credential). */
  async refuseIfLocked(actor: string): Promise<void> {
    const lockedUntil = this.current(await this.lockouts.findOne({ _id: actor }), new Date()).lockedUntil;
    if (lockedUntil) throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${lockedUntil.toISOString()}.`);
  }

  /** Locks an actor at once (a registration that lacks required data). */
  async lockNow(actor: string): Promise<void> {
    const lockedUntil = await transact<LockoutDocument, Date>(this.lockouts, actor, (document, now) => {
      const until = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
      return { change: { kind: 'write', set: { ...this.current(document, now), lockedUntil: until, failures: 0, dtsLastFailure: now } }, result: until };
    });
    this.logger.warn('actor locked', { reason: 'required registration data missing' });
    await this.audit.record('ACTOR_LOCKED', { type: 'actor', id: actor }, { reason: 'required registration data missing', lockedUntil: lockedUntil.toISOString() });
  }

  /** Settles a check: `failed` counts a failure (and may lock), `succeeded` clears the failures, `released` only frees the slot. */
  async settle(actor: string, lease: Lease, outcome: 'succeeded' | 'failed' | 'released', auditName: AuditName): Promise<void> {
    const locked = await transact<LockoutDocument, { failures: number; lockedUntil: Date } | null>(this.lockouts, actor, (document, now) => {
      const state = this.current(document, now);
      // A lease that lapsed was dropped with its slot; what the check found still counts.
      if (!holds(document?.leases, lease) && outcome === 'released') return { change: { kind: 'keep' }, result: null };
      const next: State = { ...state, leases: without(state.leases, lease) };
      let locks: { failures: number; lockedUntil: Date } | null = null;
      if (outcome === 'succeeded') Object.assign(next, { failures: 0, dtsLastFailure: null });
      if (outcome === 'failed') {
        Object.assign(next, { failures: state.failures + 1, dtsLastFailure: now });
        if (!state.lockedUntil && next.failures >= this.config.loginMaxFailures) {
          next.lockedUntil = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
          locks = { failures: next.failures, lockedUntil: next.lockedUntil };
        }
      }
      return { change: this.store(next), result: locks };
    });
    if (locked) {
      this.logger.warn('actor locked', { failures: locked.failures });
      await this.audit.record('ACTOR_LOCKED', { type: 'actor', id: await auditName() }, { failures: locked.failures, lockedUntil: locked.lockedUntil.toISOString() });
    }
  }

  /** The state as it stands at `now`: failures older than one lock period are forgotten, and so is a lock that has passed. */
  private current(document: LockoutDocument | null, now: Date): State {
    const state: State = {
      failures: document?.failures ?? 0,
      dtsLastFailure: document?.dtsLastFailure ?? null,
      lockedUntil: document?.lockedUntil ?? null,
      leases: liveLeases(document?.leases, now),
    };
    const periodAgo = now.getTime() - this.config.lockPeriodSeconds * 1000;
    if (state.lockedUntil && state.lockedUntil.getTime() <= now.getTime()) Object.assign(state, { failures: 0, lockedUntil: null });
    if (!state.lockedUntil && state.dtsLastFailure && state.dtsLastFailure.getTime() < periodAgo) state.failures = 0;
    // Failures at the limit without a lock (left by an older version, or under a lowered limit) lock until they lapse.
    if (!state.lockedUntil && state.dtsLastFailure && state.failures >= this.config.loginMaxFailures) {
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
    private readonly lease: Lease,
    private readonly auditName: AuditName,
  ) {}

  /** The credential was right: frees the slot and clears the actor's failures. */
  succeeded(): Promise<void> {
    return this.settle('succeeded');
  }

  /** The credential was wrong: counts a failure; the one that reaches the limit locks the actor. */
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
    await this.lockouts.settle(this.actor, this.lease, outcome, this.auditName);
  }
}

import { MongoServerError, type Collection } from 'mongodb';
import type { AuditTrail } from '../../../../platform/audit.js';
import type { Config } from '../../../../platform/config.js';
import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { Logger } from '../../../../platform/logger.js';
import type { LockoutDocument } from '../datasources/auth.js';

const DUPLICATE_KEY = 11000;

/**
 * Attempts per actor (a user name, a device, a prospect) and the lock they lead to. An attempt
 * is counted before the credential is checked, in one atomic update, so parallel guesses cannot
 * slip past the limit: after `loginMaxFailures` unsuccessful attempts within one lock period the
 * actor is locked for `lockPeriodSeconds`. A success clears the count.
 */
export class Lockouts {
  constructor(
    private readonly lockouts: Collection<LockoutDocument>,
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {}

  /** Counts one attempt; refuses with ACTOR_LOCKED when the actor is locked or this attempt is over the limit. */
  async attempt(actor: string): Promise<void> {
    const now = new Date();
    // Failures older than one lock period are forgotten, and so is a lock that has passed.
    await this.lockouts.updateOne(
      { _id: actor, $or: [{ dtsLastFailure: { $lt: this.ago(now) } }, { lockedUntil: { $lte: now } }] },
      { $set: { failures: 0, lockedUntil: null } },
    );
    let after: LockoutDocument | null;
    try {
      after = await this.lockouts.findOneAndUpdate(
        { _id: actor, lockedUntil: null },
        { $inc: { failures: 1 }, $set: { dtsLastFailure: now } },
        { upsert: true, returnDocument: 'after' },
      );
    } catch (error) {
      // The document exists but is locked, so the upsert collided with it.
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) after = null;
      else throw error;
    }
    if (after && after.failures <= this.config.loginMaxFailures) return;
    const lockedUntil = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
    if (after) {
      const locked = await this.lockouts.updateOne({ _id: actor, lockedUntil: null }, { $set: { lockedUntil } });
      this.logger.warn('actor locked', { failures: after.failures - 1 });
      if (locked.modifiedCount === 1) await this.audit.record('ACTOR_LOCKED', { type: 'actor', id: actor }, { failures: after.failures - 1, lockedUntil: lockedUntil.toISOString() });
    }
    const lock = await this.lockouts.findOne({ _id: actor });
    this.logger.info('refused: actor locked');
    await this.audit.record('LOGIN_REFUSED', { type: 'actor', id: actor }, { reason: 'locked' });
    throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${(lock?.lockedUntil ?? lockedUntil).toISOString()}.`);
  }

  /** Refuses a locked actor without counting an attempt (for calls that check no credential). */
  async refuseIfLocked(actor: string): Promise<void> {
    const lock = await this.lockouts.findOne({ _id: actor });
    if (lock?.lockedUntil && lock.lockedUntil.getTime() > Date.now()) {
      throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${lock.lockedUntil.toISOString()}.`);
    }
  }

  /** Locks an actor at once (a registration that lacks required data). */
  async lockNow(actor: string): Promise<void> {
    const now = new Date();
    const lockedUntil = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
    await this.lockouts.updateOne({ _id: actor }, { $set: { lockedUntil, failures: 0, dtsLastFailure: now } }, { upsert: true });
    this.logger.warn('actor locked', { reason: 'required registration data missing' });
    await this.audit.record('ACTOR_LOCKED', { type: 'actor', id: actor }, { reason: 'required registration data missing', lockedUntil: lockedUntil.toISOString() });
  }

  /** A successful attempt clears the actor's count. */
  async succeeded(actor: string): Promise<void> {
    await this.lockouts.deleteOne({ _id: actor });
  }

  private ago(now: Date): Date {
    return new Date(now.getTime() - this.config.lockPeriodSeconds * 1000);
  }
}

import type { Collection } from 'mongodb';
import type { Config } from '../../../../platform/config.js';
import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { Logger } from '../../../../platform/logger.js';
import type { LockoutDocument } from '../datasources/auth.js';

/**
 * Failed attempts per actor (a user name, a device, a prospect) and the lock they lead to:
 * `loginMaxFailures` failures within one lock period lock the actor for `lockPeriodSeconds`.
 */
export class Lockouts {
  constructor(
    private readonly lockouts: Collection<LockoutDocument>,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  /** Refuses a locked actor with ACTOR_LOCKED. */
  async refuseIfLocked(actor: string): Promise<void> {
    const lock = await this.lockouts.findOne({ _id: actor });
    if (lock?.lockedUntil && lock.lockedUntil.getTime() > Date.now()) {
      this.logger.info('refused: actor locked', { lockedUntil: lock.lockedUntil.toISOString() });
      throw appError(ErrorCode.ACTOR_LOCKED, `Locked after repeated failures until ${lock.lockedUntil.toISOString()}.`);
    }
  }

  /** Counts a failure atomically; the failure that reaches the limit sets the lock and restarts the count. */
  async recordFailure(actor: string): Promise<void> {
    const now = new Date();
    // Failures older than one lock period are forgotten.
    await this.lockouts.updateOne({ _id: actor, dtsLastFailure: { $lt: new Date(now.getTime() - this.config.lockPeriodSeconds * 1000) } }, { $set: { failures: 0 } });
    const after = await this.lockouts.findOneAndUpdate(
      { _id: actor },
      { $inc: { failures: 1 }, $set: { dtsLastFailure: now } },
      { upsert: true, returnDocument: 'after' },
    );
    if (after && after.failures >= this.config.loginMaxFailures) {
      await this.lockouts.updateOne({ _id: actor, failures: after.failures }, { $set: { lockedUntil: this.until(now), failures: 0 } });
      this.logger.warn('actor locked', { failures: after.failures });
    }
  }

  /** Locks an actor at once (a registration that lacks required data). */
  async lockNow(actor: string): Promise<void> {
    const now = new Date();
    await this.lockouts.updateOne({ _id: actor }, { $set: { lockedUntil: this.until(now), failures: 0, dtsLastFailure: now } }, { upsert: true });
    this.logger.warn('actor locked', { reason: 'required registration data missing' });
  }

  async clear(actor: string): Promise<void> {
    await this.lockouts.deleteOne({ _id: actor });
  }

  private until(now: Date): Date {
    return new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
  }
}

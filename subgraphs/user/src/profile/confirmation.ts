import { randomInt } from 'node:crypto';
import type { Collection } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import type { Notifier } from '../../../../platform/messaging/notify.js';
import { sha256 } from '../../../../platform/security/secrets.js';
import { consumeCode } from '../codes.js';
import type { ConfirmationDocument, UserDocument } from './datasource.js';
import type { Referrals } from '../onboarding/referrals.js';

/** Codes live a day; at most five are sent per hour for one user and kind. */
const CODE_LIFETIME_MS = 24 * 3600 * 1000;
const MAX_CODES_PER_HOUR = 5;

const hashCode = (userId: string, code: string) => sha256(`${userId}:${code}`);

/** Issues confirmation codes for emails and mobile numbers, and checks them. */
export class Confirmations {
  constructor(
    private readonly confirmations: Collection<ConfirmationDocument>,
    private readonly users: Collection<UserDocument>,
    private readonly notifier: Notifier,
    private readonly logger: Logger,
    private readonly referrals: Referrals,
  ) {}

  /** Refuses with RATE_LIMITED when MAX_CODES_PER_HOUR codes of this kind went to the user in the last hour. */
  async assertMaySend(SvcUserId: string, kind: 'email' | 'mobile'): Promise<void> {
    const pending = await this.confirmations.findOne({ _id: `${SvcUserId}:${kind}` });
    const recent = (pending?.dtsIssued ?? []).filter((at) => at.getTime() > Date.now() - 3600_000);
    if (recent.length >= MAX_CODES_PER_HOUR) {
      const field = kind === 'email' ? 'email' : 'mobile';
      // The next code may go when the oldest of the hour's codes leaves the window.
      const oldest = Math.min(...recent.map((at) => at.getTime()));
      const retryAfterSeconds = Math.max(1, Math.ceil((oldest + 3600_000 - Date.now()) / 1000));
      throw appError(
        ErrorCode.RATE_LIMITED,
        `At most ${MAX_CODES_PER_HOUR} ${kind} confirmation codes are sent per hour; try again in ${retryAfterSeconds} s.`,
        { field, retryAfterSeconds },
      );
    }
  }

  /**
   * Replaces any pending code of that kind with a new six-digit one and sends it to `target`.
   * A failed delivery is logged, not thrown: the change stands, and submitting the same
   * unconfirmed value again sends a new code.
   */
  async issue(SvcUserId: string, kind: 'email' | 'mobile', target: string): Promise<void> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const now = new Date();
    const previous = await this.confirmations.findOne({ _id: `${SvcUserId}:${kind}` });
    const dtsIssued = [...(previous?.dtsIssued ?? []).filter((at) => at.getTime() > now.getTime() - 3600_000), now];
    await this.confirmations.replaceOne(
      { _id: `${SvcUserId}:${kind}` },
      {
        SvcUserId,
        kind,
        target,
        codeHash: hashCode(SvcUserId, code),
        attempts: 0,
        dtsExpiry: new Date(now.getTime() + CODE_LIFETIME_MS),
        dtsIssued,
      },
      { upsert: true },
    );
    const text = `Your confirmation code is ${code}. It is valid for 24 hours.`;
    try {
      if (kind === 'email') await this.notifier.email({ to: target, subject: 'Confirm your email address', text });
      else await this.notifier.sms({ to: target, text });
    } catch (error) {
      this.logger.warn('confirmation code not delivered', { kind, SvcUserId, error: (error as Error).message });
    }
  }

  /**
   * Confirms with a code. NOT_FOUND when already confirmed (the spec's 404); CODE_INVALID for a
   * wrong, expired or burned code. The code is consumed by a conditional delete, so two racing
   * confirmations cannot both use it.
   */
  async confirm(SvcUserId: string, kind: 'email' | 'mobile', code: string): Promise<UserDocument> {
    const flag = kind === 'email' ? 'isEmailConfirmed' : 'isMobilePhoneConfirmed';
    const field = kind === 'email' ? 'confirmationCodeEmail' : 'confirmationCodeMobile';
    const user = await this.users.findOne({ _id: SvcUserId });
    if (!user) throw appError(ErrorCode.NOT_FOUND, 'No such user.', { field: 'SvcUserId' });
    if (user[flag]) throw appError(ErrorCode.NOT_FOUND, `The ${kind} is already confirmed.`, { field });
    const pending = await consumeCode(this.confirmations, `${SvcUserId}:${kind}`, hashCode(SvcUserId, code));
    if (!pending) {
      this.logger.info('confirmation refused', { kind, SvcUserId });
      throw appError(ErrorCode.CODE_INVALID, `The ${kind} confirmation code is wrong, expired or used up.`, { field });
    }
    const target = kind === 'email' ? 'email' : 'mobile';
    const updated = await this.users.findOneAndUpdate(
      { _id: SvcUserId, [target]: pending.target },
      { $set: { [flag]: true, dtsModified: new Date() } },
      { returnDocument: 'after' },
    );
    if (!updated) throw appError(ErrorCode.CODE_INVALID, `The ${kind} changed after the code was sent.`, { field });
    this.logger.info('confirmed', { kind, SvcUserId });
    await this.referrals.confirmed(updated);
    return updated;
  }
}

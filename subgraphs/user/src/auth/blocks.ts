import type { Collection } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { UserDocument } from '../profile/datasource.js';
import type { AnnounceSessionsEnded } from './sessions.js';

/**
 * Blocks and unblocks users for the bank's operators. A block is announced with the write, so that
 * no gateway answers the user's live sessions from memory afterwards; both are audited.
 */
export class UserBlocks {
  constructor(
    private readonly users: Collection<UserDocument>,
    private readonly audit: AuditTrail,
    private readonly announce: AnnounceSessionsEnded,
  ) {}

  /** Sets the user's `isActive`; NOT_FOUND for an unknown user. */
  async setActive(SvcUserId: string, isActive: boolean): Promise<UserDocument> {
    const user = await this.users.findOneAndUpdate(
      { _id: SvcUserId },
      { $set: { isActive, dtsModified: new Date() } },
      { returnDocument: 'after' },
    );
    if (!user) throw appError(ErrorCode.NOT_FOUND, 'No such user.', { field: 'SvcUserId' });
    if (!isActive) await this.announce({ SvcUserId });
    await this.audit.record(isActive ? 'USER_UNBLOCKED' : 'USER_BLOCKED', { type: 'user', id: SvcUserId });
    return user;
  }
}

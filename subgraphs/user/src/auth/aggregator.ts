import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import type { ServiceConfig } from '../../../../platform/runtime/config-slices.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, NEW_PASSWORD_RULES, required } from '../../../../platform/security/validate.js';
import type { AggregatorUserDocument, AuthCollections } from './datasource.js';
import type { Lockouts } from './lockout.js';
import type { Sessions } from './sessions.js';

/** Checks a new aggregator password against every rule of the spec. */
export function checkNewPassword(value: unknown): string {
  const password = checkString(required(value, 'newPassword'), 'newPassword', { min: 8, max: 50 })!;
  for (const { pattern, message } of NEW_PASSWORD_RULES) {
    if (!pattern.test(password)) throw appError(ErrorCode.VALIDATION_FAILED, `newPassword ${message}.`, { field: 'newPassword' });
  }
  return password;
}

interface TokenResult {
  dtsExpireAt: Date;
  token: string;
  type: 'base';
  tokens: Array<{ token: string; type: 'base' | 'confined'; dtsExpireAt: Date }>;
}

/** Aggregator users' tokens and passwords. */
export class AggregatorAuth {
  constructor(
    private readonly auth: AuthCollections,
    private readonly sessions: Sessions,
    private readonly lockouts: Lockouts,
    private readonly config: ServiceConfig<'user'>,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {}

  /** `POST /auth/get-token`: checks the login and issues a base and a confined token. */
  async getToken(input: { login?: unknown; password?: unknown; requestId?: unknown }): Promise<TokenResult> {
    const login = checkString(required(input.login, 'login'), 'login', ID_RULE)!;
    const password = checkString(required(input.password, 'password'), 'password', { min: 1, max: 50 })!;
    checkString(input.requestId, 'requestId', { min: 1, max: 32, safeText: true });
    const actor = `aggregator:${login.toLowerCase()}`;
    const attempt = await this.lockouts.reserve(actor);
    let user: AggregatorUserDocument;
    try {
      const found = await this.auth.aggregatorUsers.findOne({ _id: login.toLowerCase() });
      const ok = await verifyPassword(password, found?.passwordHash ?? DUMMY_PASSWORD_HASH);
      if (!ok || !found) {
        this.logger.info('aggregator login failed');
        await this.audit.record('LOGIN_FAILED', { type: 'actor', id: actor }, { channel: 'aggregator', reason: 'wrong login or password' });
        await attempt.failed();
        throw appError(ErrorCode.UNAUTHENTICATED, 'Login or password is incorrect.');
      }
      user = found;
      await attempt.succeeded();
    } finally {
      await attempt.release();
    }
    const subject = { kind: 'aggregator' as const, svcAggregatorId: user.svcAggregatorId, login: user.login };
    const base = await this.sessions.issue({ ...subject, tokenType: 'base' }, this.config.aggregatorTokenLifetimeSeconds);
    const confined = await this.sessions.issue({ ...subject, tokenType: 'confined' }, this.config.confinedTokenLifetimeSeconds);
    // A password change that landed between the check and the issue revoked everything before
    // these sessions existed: make sure they do not outlive it.
    const current = await this.auth.aggregatorUsers.findOne({ _id: user._id }, { projection: { passwordHash: 1 } });
    if (current?.passwordHash !== user.passwordHash) {
      await this.sessions.revoke(base.sessionId);
      await this.sessions.revoke(confined.sessionId);
      throw appError(ErrorCode.UNAUTHENTICATED, 'Login or password is incorrect.');
    }
    this.logger.info('aggregator token issued', { login: user.login, svcAggregatorId: user.svcAggregatorId });
    await this.audit.record(
      'LOGIN_SUCCEEDED',
      { type: 'aggregatorUser', id: user.login },
      { channel: 'aggregator', svcAggregatorId: user.svcAggregatorId },
    );
    return {
      dtsExpireAt: base.dtsExpiry,
      token: base.token,
      type: 'base',
      tokens: [
        { token: base.token, type: 'base', dtsExpireAt: base.dtsExpiry },
        { token: confined.token, type: 'confined', dtsExpireAt: confined.dtsExpiry },
      ],
    };
  }

  /** `POST /user/change-password`: checks the old password, stores the new one and revokes every token of the user. */
  async changePassword(
    login: string,
    input: { oldPassword?: unknown; newPassword?: unknown },
  ): Promise<{ success: true; dtsPasswordChanged: Date; revokedTokens: number }> {
    const oldPassword = checkString(required(input.oldPassword, 'oldPassword'), 'oldPassword', { min: 1, max: 50 })!;
    const newPassword = checkNewPassword(input.newPassword);
    if (newPassword === oldPassword)
      throw appError(ErrorCode.VALIDATION_FAILED, 'newPassword must differ from oldPassword.', { field: 'newPassword' });
    // Wrong old passwords count toward the same lock as wrong logins: a stolen token cannot brute-force the password.
    const actor = `aggregator:${login.toLowerCase()}`;
    const attempt = await this.lockouts.reserve(actor);
    let user: AggregatorUserDocument;
    try {
      const found = await this.auth.aggregatorUsers.findOne({ _id: login.toLowerCase() });
      if (!found || !(await verifyPassword(oldPassword, found.passwordHash))) {
        await this.audit.record(
          'LOGIN_FAILED',
          { type: 'actor', id: actor },
          { channel: 'aggregator', reason: 'oldPassword is not the current password (change-password)' },
        );
        await attempt.failed();
        throw appError(ErrorCode.FORBIDDEN, 'oldPassword is not the current password.', { field: 'oldPassword' });
      }
      user = found;
      await attempt.succeeded();
    } finally {
      await attempt.release();
    }
    const dtsPasswordChanged = new Date();
    // Conditional on the hash that was checked: of two racing changes, only one wins.
    const changed = await this.auth.aggregatorUsers.updateOne(
      { _id: user._id, passwordHash: user.passwordHash },
      { $set: { passwordHash: await hashPassword(newPassword), dtsPasswordChanged } },
    );
    if (changed.modifiedCount !== 1) throw appError(ErrorCode.CONFLICT, 'The password was changed meanwhile; try again.');
    const revokedTokens = await this.sessions.revokeAggregatorUser(user.login);
    this.logger.info('aggregator password changed', { login: user.login, revokedTokens });
    await this.audit.record('PASSWORD_CHANGED', { type: 'aggregatorUser', id: user.login }, { revokedTokens });
    return { success: true, dtsPasswordChanged, revokedTokens };
  }
}

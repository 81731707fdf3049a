import type { Collection, Db } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { recordEvent } from '../../../../platform/messaging/outbox.js';
import { SESSIONS_ENDED, type SessionsEnded } from '../../../../platform/contracts/events.js';
import { type ResolvedSession } from '../../../../platform/contracts/principal.js';
import { newId, newOpaqueToken, sha256 } from '../../../../platform/security/secrets.js';
import type { SessionDocument } from './datasource.js';
import type { UserDocument } from '../profile/datasource.js';

/** Who a session belongs to, without the bookkeeping fields. */
export type SessionSubject =
  | { kind: 'user'; SvcUserId: string; channel: string }
  | { kind: 'prospect'; prospectId: string; deviceTag: string }
  | { kind: 'aggregator'; svcAggregatorId: string; login: string; tokenType: 'base' | 'confined' };

/** The credential header a token arrives in: end users and prospects use `token`, aggregators `x-svc-token`. */
export type TokenHeader = 'token' | 'x-svc-token';

/** How many token hashes `resolve` remembers the user of. */
const KNOWN_TOKENS = 10_000;

/** Tells every gateway that sessions ended before their expiry (an event on the bus, through the outbox). */
export type AnnounceSessionsEnded = (ended: SessionsEnded) => Promise<void>;

/** Announces ended sessions through the user subgraph's outbox in `db`, for no audience but the gateways. */
export function announceThrough(db: Db): AnnounceSessionsEnded {
  return (ended) => recordEvent(db, SESSIONS_ENDED, {}, ended);
}

/**
 * Issues, resolves and revokes opaque session tokens; stores only their SHA-256 hashes. Issues and
 * revocations are audited, and revocations announced.
 */
export class Sessions {
  /**
   * The user a token hash belongs to, for tokens resolved before: a session never changes hands,
   * so the user's record can be read while the session is (whether either still holds is read
   * afresh every time).
   */
  private readonly userOfToken = new Map<string, string>();

  constructor(
    private readonly sessions: Collection<SessionDocument>,
    private readonly users: Collection<UserDocument>,
    private readonly audit: AuditTrail,
    private readonly announce: AnnounceSessionsEnded,
  ) {}

  async issue(
    subject: SessionSubject,
    lifetimeSeconds: number,
    now = new Date(),
  ): Promise<{ token: string; dtsExpiry: Date; sessionId: string }> {
    const token = newOpaqueToken();
    const dtsExpiry = new Date(now.getTime() + lifetimeSeconds * 1000);
    const sessionId = newId('ses_');
    await this.sessions.insertOne({
      _id: sessionId,
      tokenHash: sha256(token),
      kind: subject.kind,
      SvcUserId: subject.kind === 'user' ? subject.SvcUserId : null,
      prospectId: subject.kind === 'prospect' ? subject.prospectId : null,
      deviceTag: subject.kind === 'prospect' ? subject.deviceTag : null,
      svcAggregatorId: subject.kind === 'aggregator' ? subject.svcAggregatorId : null,
      login: subject.kind === 'aggregator' ? subject.login : null,
      tokenType: subject.kind === 'aggregator' ? subject.tokenType : null,
      channel: subject.kind === 'user' ? subject.channel : subject.kind === 'prospect' ? 'prospect' : 'aggregator',
      dtsCreated: now,
      dtsExpiry,
      dtsRevoked: null,
    });
    await this.audit.record(
      'TOKEN_ISSUED',
      { type: 'session', id: sessionId },
      {
        kind: subject.kind,
        owner: subject.kind === 'user' ? subject.SvcUserId : subject.kind === 'prospect' ? subject.prospectId : subject.login,
        channel: subject.kind === 'user' ? subject.channel : null,
        tokenType: subject.kind === 'aggregator' ? subject.tokenType : null,
        dtsExpiry: dtsExpiry.toISOString(),
      },
    );
    return { token, dtsExpiry, sessionId };
  }

  /** The principal and expiry of a live token sent in `header`, or null when it is unknown, expired, revoked or sent in the wrong header. */
  async resolve(token: string, header: TokenHeader): Promise<ResolvedSession | null> {
    const tokenHash = sha256(token);
    const knownUser = header === 'token' ? this.userOfToken.get(tokenHash) : undefined;
    const sessionRead = this.sessions.findOne({ tokenHash });
    const userRead = knownUser === undefined ? null : this.activeUser(knownUser);
    userRead?.catch(() => {});
    const session = await sessionRead;
    if (!session || session.dtsRevoked !== null || session.dtsExpiry.getTime() <= Date.now()) return null;
    const dtsExpiry = session.dtsExpiry.toISOString();
    if (header === 'x-svc-token') {
      return session.kind === 'aggregator'
        ? {
            principal: {
              kind: 'aggregator',
              svcAggregatorId: session.svcAggregatorId!,
              login: session.login!,
              sessionId: session._id,
              tokenType: session.tokenType ?? 'base',
            },
            dtsExpiry,
          }
        : null;
    }
    if (session.kind === 'user') {
      const SvcUserId = session.SvcUserId!;
      // A user blocked after login loses their live sessions at once.
      const active = userRead && knownUser === SvcUserId ? await userRead : await this.activeUser(SvcUserId);
      if (knownUser !== SvcUserId) this.remember(tokenHash, SvcUserId);
      return active
        ? { principal: { kind: 'user', userId: SvcUserId, sessionId: session._id, channel: session.channel }, dtsExpiry }
        : null;
    }
    if (session.kind === 'prospect')
      return {
        principal: { kind: 'prospect', prospectId: session.prospectId!, sessionId: session._id, deviceTag: session.deviceTag! },
        dtsExpiry,
      };
    return null;
  }

  private async activeUser(SvcUserId: string): Promise<boolean> {
    const user = await this.users.findOne({ _id: SvcUserId }, { projection: { isActive: 1 } });
    return user?.isActive === true;
  }

  private remember(tokenHash: string, SvcUserId: string): void {
    if (this.userOfToken.size >= KNOWN_TOKENS) this.userOfToken.delete(this.userOfToken.keys().next().value!);
    this.userOfToken.set(tokenHash, SvcUserId);
  }

  /** Revokes one session; true when it was live. */
  async revoke(sessionId: string): Promise<boolean> {
    const result = await this.sessions.updateOne({ _id: sessionId, dtsRevoked: null }, { $set: { dtsRevoked: new Date() } });
    if (result.modifiedCount === 1) {
      await this.audit.record('TOKEN_REVOKED', { type: 'session', id: sessionId });
      await this.announce({ sessionId });
    }
    return result.modifiedCount === 1;
  }

  /** Revokes every live session of an aggregator user; returns how many. */
  async revokeAggregatorUser(login: string): Promise<number> {
    const result = await this.sessions.updateMany({ kind: 'aggregator', login, dtsRevoked: null }, { $set: { dtsRevoked: new Date() } });
    await this.audit.record('TOKEN_REVOKED', { type: 'aggregatorUser', id: login }, { revokedTokens: result.modifiedCount });
    await this.announce({ aggregatorLogin: login });
    return result.modifiedCount;
  }
}

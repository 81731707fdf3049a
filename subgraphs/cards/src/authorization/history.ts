import type { Collection, Db, Filter } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Principal } from '../../../../platform/contracts/principal.js';
import type { Connection } from '../../../../platform/graphql/paging.js';
import { requireAggregator, requireUser } from '../../../../platform/security/authorize.js';
import { cardMessagesCollection, type CardMessageDocument } from './datasource.js';

/** How far back a window of decided messages may start. */
const HISTORY_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The schema's CardAuthorizationSummary. */
export interface AuthorizationSummary {
  since: Date;
  asOf: Date;
  total: number;
  approved: number;
  declined: number;
  approvalRate: number | null;
  declineReasons: Array<{ responseCode: string; decidedBy: CardMessageDocument['decidedBy']; reason: string; count: number }>;
}

interface ReasonGroup {
  _id: { responseCode: string; decidedBy: CardMessageDocument['decidedBy']; reason: string };
  count: number;
}

/**
 * Whose messages the caller reads: an aggregator its card program's, an end user their own cards',
 * as `cardAuthorization` decides for one message. Anyone else is refused before any argument is
 * looked at, so a refusal does not depend on them.
 */
function ownerOf(principal: Principal): Filter<CardMessageDocument> {
  if (principal.kind === 'aggregator') return { svcAggregatorId: requireAggregator(principal, 'read').svcAggregatorId };
  return { SvcUserId: requireUser(principal) };
}

function checkSince(since: Date, now: Date): void {
  if (now.getTime() - since.getTime() > HISTORY_DAYS * DAY_MS)
    throw appError(ErrorCode.VALIDATION_FAILED, `since may be at most ${HISTORY_DAYS} days back.`, { field: 'since' });
}

const cursorOf = (message: CardMessageDocument) => Buffer.from(`${message.dtsReceived.toISOString()}|${message._id}`).toString('base64url');

/** The place an `after` cursor marks; a cursor this connection did not write is refused. */
function placeOf(cursor: string): { at: Date; id: string } {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const split = text.indexOf('|');
  const at = new Date(split > 0 ? text.slice(0, split) : '');
  const id = text.slice(split + 1);
  // Written back, a cursor of ours reads the same; anything else does not.
  if (Number.isNaN(at.getTime()) || !id || Buffer.from(`${at.toISOString()}|${id}`).toString('base64url') !== cursor)
    throw appError(ErrorCode.VALIDATION_FAILED, 'after is not a cursor of this connection.', { field: 'after' });
  return { at, id };
}

/** Decided card messages over a recent window, as their aggregator or their cards' user sees them: counted, or page by page. */
export class AuthorizationHistory {
  private readonly messages: Collection<CardMessageDocument>;

  constructor(db: Db) {
    this.messages = cardMessagesCollection(db);
  }

  /** The caller's messages received from `since` until now, counted in one indexed aggregation. */
  async summary(principal: Principal, since: Date): Promise<AuthorizationSummary> {
    const owner = ownerOf(principal);
    const asOf = new Date();
    checkSince(since, asOf);
    // Bounded by asOf too: a client adds the events received after it, and must not count one twice.
    const groups = await this.messages
      .aggregate<ReasonGroup>([
        { $match: { ...owner, dtsReceived: { $gte: since, $lte: asOf } } },
        { $group: { _id: { responseCode: '$responseCode', decidedBy: '$decidedBy', reason: '$reason' }, count: { $sum: 1 } } },
      ])
      .toArray();
    let approved = 0;
    const declineReasons: AuthorizationSummary['declineReasons'] = [];
    for (const group of groups) {
      if (group._id.responseCode === '00') approved += group.count;
      else declineReasons.push({ ...group._id, count: group.count });
    }
    declineReasons.sort((a, b) => b.count - a.count || a.responseCode.localeCompare(b.responseCode) || a.reason.localeCompare(b.reason));
    const declined = declineReasons.reduce((sum, reason) => sum + reason.count, 0);
    const total = approved + declined;
    return {
      since,
      asOf,
      total,
      approved,
      declined,
      approvalRate: total === 0 ? null : Math.round((approved / total) * 10_000) / 100,
      declineReasons,
    };
  }

  /** The caller's messages received from `since`, newest first: `first` (1-1000, default 100) after the `after` cursor. */
  async page(
    principal: Principal,
    args: { since: Date; first?: number | null; after?: string | null },
  ): Promise<Connection<CardMessageDocument>> {
    const owner = ownerOf(principal);
    checkSince(args.since, new Date());
    const first = args.first ?? 100;
    if (!Number.isInteger(first) || first < 1 || first > 1000)
      throw appError(ErrorCode.VALIDATION_FAILED, 'first must be an integer from 1 to 1000.', { field: 'first' });
    const conditions: Array<Filter<CardMessageDocument>> = [owner, { dtsReceived: { $gte: args.since } }];
    if (args.after) {
      const { at, id } = placeOf(args.after);
      conditions.push({ $or: [{ dtsReceived: { $lt: at } }, { dtsReceived: at, _id: { $lt: id } }] });
    }
    const found = await this.messages
      .find({ $and: conditions })
      .sort({ dtsReceived: -1, _id: -1 })
      .limit(first + 1)
      .toArray();
    const edges = found.slice(0, first).map((node) => ({ cursor: cursorOf(node), node }));
    return {
      edges,
      pageInfo: {
        hasNextPage: found.length > first,
        hasPreviousPage: Boolean(args.after),
        startCursor: edges[0]?.cursor ?? null,
        endCursor: edges.at(-1)?.cursor ?? null,
      },
    };
  }
}

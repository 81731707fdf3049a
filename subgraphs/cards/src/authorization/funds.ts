import { randomBytes } from 'node:crypto';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import { fromMinor, type MinorUnits } from '../../../../platform/money/money.js';
import type { Logger } from '../../../../platform/runtime/logger.js';

const HOLD = `mutation ($input: CardFundsHoldInput!) { holdCardFunds(input: $input) }`;
const RELEASE = `mutation ($input: [CardHoldReleaseInput!]!, $undo: Boolean!) { releaseCardHolds(input: $input, undo: $undo) }`;

/** What payments answered a hold: held (under this id), not covered, too many open, or no answer. */
export type FundsOutcome = { kind: 'held'; holdId: string } | { kind: 'insufficient' } | { kind: 'tooManyHolds' } | { kind: 'unavailable' };

/** A hold on a card's account, as card authorization names it. */
export interface HeldFunds {
  SvcAccountId: string;
  holdId: string;
}

/** What a message asks to hold. */
export interface FundsRequest {
  messageId: string;
  SvcAccountId: string;
  SvcUserId: string;
  amount: MinorUnits;
  currency: string;
  /** An authorization (0100), held until completed, reversed or expired; otherwise a purchase, held until posted. */
  authorization: boolean;
  /** On a completion: the hold of the authorization it completes. */
  completes: string | null;
  /** An advice: held whether or not the account covers it. */
  force: boolean;
}

/**
 * The account's funds, as the ledger's owner keeps them: card authorization asks payments (through
 * the graph) to hold an approved message's amount, and tells it which holds to let go. Each
 * deciding attempt holds under its own id, so a copy of the message that loses the insert to
 * another gives back exactly what it took, and never the winner's hold.
 */
export class AccountFunds {
  constructor(
    private readonly graph: GraphClient,
    private readonly logger: Logger,
  ) {}

  async hold(request: FundsRequest): Promise<FundsOutcome> {
    const holdId = `${request.messageId}.${randomBytes(6).toString('hex')}`;
    try {
      const { holdCardFunds } = await this.graph.request<{ holdCardFunds: 'HELD' | 'INSUFFICIENT_FUNDS' | 'TOO_MANY_HOLDS' }>(HOLD, {
        input: {
          holdId,
          SvcAccountId: request.SvcAccountId,
          SvcUserId: request.SvcUserId,
          amount: fromMinor(request.amount, request.currency),
          currency: request.currency,
          authorization: request.authorization,
          completes: request.completes,
          force: request.force,
        },
      });
      if (holdCardFunds === 'HELD') return { kind: 'held', holdId };
      return holdCardFunds === 'TOO_MANY_HOLDS' ? { kind: 'tooManyHolds' } : { kind: 'insufficient' };
    } catch (error) {
      this.logger.error('card funds hold failed', { messageId: request.messageId, error: (error as Error).message });
      // The hold may have been taken and its answer lost: give it back, if it is there.
      await this.release([{ SvcAccountId: request.SvcAccountId, holdId }], true);
      return { kind: 'unavailable' };
    }
  }

  /** Releases holds, each once; `undo` for what a deciding attempt took and will not keep. Never throws: a hold not released expires. */
  async release(holds: readonly HeldFunds[], undo: boolean): Promise<void> {
    if (holds.length === 0) return;
    try {
      await this.graph.request(RELEASE, { input: holds, undo });
    } catch (error) {
      this.logger.error('card hold release failed; the hold stays until it expires', {
        holds: holds.map((hold) => hold.holdId),
        error: (error as Error).message,
      });
    }
  }
}

/** The release of the holds named, as the decision lane sends it; throws so that the batch is carried again. */
export async function releaseHolds(graph: GraphClient, holds: readonly HeldFunds[]): Promise<void> {
  if (holds.length > 0) await graph.request(RELEASE, { input: holds, undo: false });
}

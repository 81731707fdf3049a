import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import type { ServiceConfig } from '../../../platform/runtime/config-slices.js';
import type { Deliveries } from '../../../platform/messaging/deliveries.js';
import type { GraphClient } from '../../../platform/contracts/graph.js';
import { loaderByKey, loaderOfGroups } from '../../../platform/graphql/loaders.js';
import type { RequestBase } from '../../../platform/graphql/subgraph.js';
import type { CardAuthorizer } from './authorization/card-authorizer.js';
import { AuthorizationHistory } from './authorization/history.js';
import { CardManagement } from './cards/card-management.js';
import { addCondorCard } from './cards/condor.js';
import { runSandbox } from './sandbox/sandbox.js';
import { CardWebhooks } from './webhooks/card-webhooks.js';
import { cardMessagesCollection, type CardMessageDocument } from './authorization/datasource.js';
import { cardsCollection, type CardDocument } from './cards/datasource.js';

/** The cards subgraph's per-request context. */
export interface CardsContext extends RequestBase {
  /** Cards by SvcCardId. */
  cards: DataLoader<string, CardDocument | null>;
  /** A user's cards by SvcUserId, main card first; sandbox test cards are not in a wallet. */
  cardsOfUser: DataLoader<string, CardDocument[]>;
  /** Decided card messages by messageId. */
  cardMessages: DataLoader<string, CardMessageDocument | null>;
  management: CardManagement;
  /** Decides card messages: one per process, so that copies of a message in flight meet. */
  authorizer: CardAuthorizer;
  /** Recent decided messages of the caller's card program or cards: counted, or page by page. */
  authorizationHistory: AuthorizationHistory;
  /** The aggregator's card webhook: configuration, enabling, and its advices' delivery log. */
  webhooks: CardWebhooks;
  /** Runs the webhook sandbox's cases against the aggregator's webhook. */
  sandbox: (svcAggregatorId: string, input: Parameters<typeof runSandbox>[3]) => ReturnType<typeof runSandbox>;
  /** Issues a Condor card to an aggregator's customer. */
  condor: (svcAggregatorId: string, input: Parameters<typeof addCondorCard>[4]) => ReturnType<typeof addCondorCard>;
}

export function createCardsContext(
  base: RequestBase,
  db: Db,
  graph: GraphClient,
  config: ServiceConfig<'cards'>,
  deliveries: Deliveries,
  authorizer: CardAuthorizer,
): CardsContext {
  const cards = cardsCollection(db);
  return {
    ...base,
    cards: loaderByKey(cards),
    cardsOfUser: loaderOfGroups(cards, 'SvcUserId', { sort: { isMain: -1, _id: 1 }, filter: { isTestCard: false } }),
    cardMessages: loaderByKey(cardMessagesCollection(db)),
    management: new CardManagement(db, base.logger, base.audit),
    authorizer,
    authorizationHistory: new AuthorizationHistory(db),
    webhooks: new CardWebhooks(db, deliveries, base.logger, base.audit, config.webhookAllowInternal),
    sandbox: (svcAggregatorId, input) => runSandbox(db, base.logger, svcAggregatorId, input, config.webhookAllowInternal),
    condor: (svcAggregatorId, input) => addCondorCard(db, graph, base.logger, svcAggregatorId, input),
  };
}

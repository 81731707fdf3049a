import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import type { Config } from '../../../platform/runtime/config.js';
import type { Deliveries } from '../../../platform/messaging/deliveries.js';
import type { GraphClient } from '../../../platform/graphql/graph-client.js';
import { loaderByKey, loaderOfGroups } from '../../../platform/graphql/loaders.js';
import type { RequestBase } from '../../../platform/graphql/subgraph.js';
import { CardAuthorizer } from './authorization.js';
import { CardManagement } from './card-management.js';
import { cardMessagesCollection, cardsCollection, type CardDocument, type CardMessageDocument } from './datasources/cards.js';

/** The cards subgraph's per-request context. */
export interface CardsContext extends RequestBase {
  db: Db;
  config: Config;
  graph: GraphClient;
  /** Cards by SvcCardId. */
  cards: DataLoader<string, CardDocument | null>;
  /** A user's cards by SvcUserId, main card first; sandbox test cards are not in a wallet. */
  cardsOfUser: DataLoader<string, CardDocument[]>;
  /** Decided card messages by messageId. */
  cardMessages: DataLoader<string, CardMessageDocument | null>;
  management: CardManagement;
  authorizer: CardAuthorizer;
  /** The advice webhooks' delivery log: resend, endpoint enabling. */
  deliveries: Deliveries;
}

export function createCardsContext(base: RequestBase, db: Db, graph: GraphClient, config: Config, deliveries: Deliveries): CardsContext {
  const cards = cardsCollection(db);
  return {
    ...base,
    db,
    config,
    graph,
    cards: loaderByKey(cards),
    cardsOfUser: loaderOfGroups(cards, 'SvcUserId', { sort: { isMain: -1, _id: 1 }, filter: { isTestCard: false } }),
    cardMessages: loaderByKey(cardMessagesCollection(db)),
    management: new CardManagement(db, base.logger, base.audit),
    authorizer: new CardAuthorizer(db, graph, base.logger, config.webhookAllowInternal, deliveries),
    deliveries,
  };
}

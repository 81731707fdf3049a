import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import { loaderByKey, loaderOfGroups } from '../../../platform/loaders.js';
import type { RequestBase } from '../../../platform/subgraph.js';
import { cardsCollection, type CardDocument } from './datasources/cards.js';

/** The cards subgraph's per-request context. */
export interface CardsContext extends RequestBase {
  /** Cards by SvcCardId. */
  cards: DataLoader<string, CardDocument | null>;
  /** A user's cards by SvcUserId, main card first. */
  cardsOfUser: DataLoader<string, CardDocument[]>;
}

export function createCardsContext(base: RequestBase, db: Db): CardsContext {
  const cards = cardsCollection(db);
  return {
    ...base,
    cards: loaderByKey(cards),
    cardsOfUser: loaderOfGroups(cards, 'SvcUserId', { sort: { isMain: -1, _id: 1 } }),
  };
}

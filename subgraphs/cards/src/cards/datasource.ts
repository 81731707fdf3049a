import type { Collection, Db } from 'mongodb';

/** A stored card. Only the masked number and the last four digits are kept, never the full PAN. */
export interface CardDocument {
  _id: string;
  SvcCardId: string;
  SvcAccountId: string;
  SvcUserId: string;
  typeId: string | null;
  cardIdBO: string | null;
  accountIdBO: string | null;
  backOfficeId: string | null;
  backOfficeName: string | null;
  status: 'active' | 'blocked';
  isActive: boolean;
  isActivated: boolean;
  isClosed: boolean;
  num: string;
  lastFour: string;
  dtsOpened: Date | null;
  dtsExpiry: Date | null;
  dtsUpdated: Date | null;
  dtsActivated: Date | null;
  currency: string | null;
  name_on_card: string | null;
  image: string | null;
  primaryUserSvcUserId: string | null;
  name: string | null;
  isMain: boolean;
  /** When the card was last made main: the latest of racing changes wins. */
  dtsMainSet: Date | null;
  /** The aggregator whose program issued the card, whose webhook decides its authorizations. */
  svcAggregatorId: string | null;
  isTestCard: boolean;
}

export function cardsCollection(db: Db): Collection<CardDocument> {
  return db.collection<CardDocument>('cards');
}

/** The cards' indexes: a user's wallet. */
export async function createCardIndexes(db: Db): Promise<void> {
  await cardsCollection(db).createIndex({ SvcUserId: 1 });
}

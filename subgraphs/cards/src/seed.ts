import type { Db } from 'mongodb';
import { DEMO } from '../../../platform/domain/demo.js';
import { cardsCollection, type CardDocument } from './cards/datasource.js';
import { webhookConfigsCollection } from './webhooks/datasource.js';

/** Seeds the demo user's two cards: a main active debit card and a blocked virtual card. Idempotent. */
export async function seedCards(db: Db, now = new Date()): Promise<void> {
  const cards = cardsCollection(db);
  const expiry = new Date(Date.UTC(now.getUTCFullYear() + 3, now.getUTCMonth() + 1, 0));
  const base = {
    SvcAccountId: DEMO.accountId,
    SvcUserId: DEMO.userId,
    accountIdBO: 'BO-ACC-000981',
    backOfficeId: 'bo1',
    backOfficeName: 'Demo back office',
    isActivated: true,
    isClosed: false,
    dtsOpened: now,
    dtsExpiry: expiry,
    dtsUpdated: now,
    dtsActivated: now,
    currency: 'USD',
    name_on_card: 'DANA Q DEMO',
    primaryUserSvcUserId: null,
    dtsMainSet: null,
    svcAggregatorId: DEMO.aggregatorId,
    isTestCard: false,
  };
  const demoCards: CardDocument[] = [
    {
      ...base,
      _id: DEMO.cardIds[0],
      SvcCardId: DEMO.cardIds[0],
      typeId: 'debit',
      cardIdBO: 'BO-CARD-1001',
      status: 'active',
      isActive: true,
      num: '5375 **** **** 4821',
      lastFour: '4821',
      image: 'cards/debit-blue.png',
      name: 'Everyday',
      isMain: true,
    },
    {
      ...base,
      _id: DEMO.cardIds[1],
      SvcCardId: DEMO.cardIds[1],
      typeId: 'virtual',
      cardIdBO: 'BO-CARD-1002',
      status: 'blocked',
      isActive: false,
      num: '5375 **** **** 7730',
      lastFour: '7730',
      image: 'cards/virtual-grey.png',
      name: 'Online shopping',
      isMain: false,
    },
  ];
  // The demo aggregator's sandbox test card: a sandbox user's, in no real user's wallet.
  demoCards.push({
    ...base,
    _id: DEMO.testCardId,
    SvcCardId: DEMO.testCardId,
    SvcUserId: 'sandbox_user',
    SvcAccountId: 'sandbox_account',
    primaryUserSvcUserId: null,
    typeId: 'test',
    cardIdBO: 'BO-CARD-TEST',
    status: 'active',
    isActive: true,
    num: '4000 **** **** 0002',
    lastFour: '0002',
    image: null,
    name: 'Sandbox test card',
    isMain: false,
    isTestCard: true,
  });
  for (const card of demoCards) await cards.updateOne({ _id: card._id }, { $setOnInsert: card }, { upsert: true });
  await webhookConfigsCollection(db).updateOne(
    { _id: DEMO.aggregatorId },
    {
      $setOnInsert: {
        url: DEMO.webhook.url,
        secret: DEMO.webhook.secret,
        defaultStrategy: DEMO.webhook.defaultStrategy,
        timeoutMs: DEMO.webhook.timeoutMs,
        dtsUpdated: now,
      },
    },
    { upsert: true },
  );
}

import { randomBytes, randomInt } from 'node:crypto';
import type { Db } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { GraphClient } from '../../../../platform/contracts/graph.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, required } from '../../../../platform/security/validate.js';
import { cardsCollection, type CardDocument } from './datasource.js';

const USER = 'query ($id: ID!) { user(SvcUserId: $id) { SvcUserId } }';
const OPEN = 'mutation ($id: ID!) { openCheckingAccount(SvcUserId: $id, currency: "USD") { SvcAccountId accountNumber routingNumber } }';

/** `POST /condor/card/add` (deprecated): a secondary debit card on a new checking account of the customer. */
export async function addCondorCard(
  db: Db,
  graph: GraphClient,
  logger: Logger,
  svcAggregatorId: string,
  input: { customerId?: string | null; cardAttributes?: Record<string, unknown> | null },
) {
  const customerId = checkString(required(input.customerId, 'customerId'), 'customerId', ID_RULE)!;
  const attributes = required(input.cardAttributes, 'cardAttributes');
  for (const field of ['productID', 'nameOnCard', 'designId', 'addressType', 'issueType'] as const)
    required(attributes[field], `cardAttributes.${field}`);
  const productID = checkString(attributes.productID, 'cardAttributes.productID', {
    max: 36,
    pattern: /^[A-Za-z0-9_-]+$/,
    patternText: 'letters, digits, _ or -',
  })!;
  const nameOnCard = checkString(attributes.nameOnCard, 'cardAttributes.nameOnCard', {
    max: 26,
    pattern: /^[A-Za-z .'-]+$/,
    patternText: 'up to 26 letters, spaces, dots, apostrophes or dashes',
  })!;
  const designId = checkString(attributes.designId, 'cardAttributes.designId', {
    max: 36,
    pattern: /^[A-Za-z0-9_-]+$/,
    patternText: 'letters, digits, _ or -',
  })!;
  checkString(attributes.addressType, 'cardAttributes.addressType', { max: 36 });
  checkString(attributes.issueType, 'cardAttributes.issueType', { max: 36 });

  // A secondary card goes to a customer of this aggregator: someone who already holds a card of its
  // program. Anyone else answers as if they did not exist.
  const primary = await cardsCollection(db).findOne(
    { SvcUserId: customerId, svcAggregatorId, isTestCard: false },
    { projection: { _id: 1 } },
  );
  const { user } = primary ? await graph.request<{ user: { SvcUserId: string } | null }>(USER, { id: customerId }) : { user: null };
  if (!user) throw appError(ErrorCode.NOT_FOUND, `No customer ${customerId} of this aggregator.`, { field: 'customerId' });
  const { openCheckingAccount: account } = await graph.request<{
    openCheckingAccount: { SvcAccountId: string; accountNumber: string; routingNumber: string };
  }>(OPEN, { id: customerId });

  const now = new Date();
  const expiry = new Date(Date.UTC(now.getUTCFullYear() + 3, now.getUTCMonth() + 1, 0));
  const lastFour = String(randomInt(0, 10_000)).padStart(4, '0');
  const cardId = newId('crd_');
  const card: CardDocument = {
    _id: cardId,
    SvcCardId: cardId,
    SvcAccountId: account.SvcAccountId,
    SvcUserId: customerId,
    typeId: 'debit',
    cardIdBO: null,
    accountIdBO: null,
    backOfficeId: productID,
    backOfficeName: 'condor',
    status: 'active',
    isActive: true,
    isActivated: false,
    isClosed: false,
    num: `5375 **** **** ${lastFour}`,
    lastFour,
    dtsOpened: now,
    dtsExpiry: expiry,
    dtsUpdated: now,
    dtsActivated: null,
    currency: 'USD',
    name_on_card: nameOnCard.toUpperCase(),
    image: `cards/${designId}.png`,
    primaryUserSvcUserId: customerId,
    name: null,
    isMain: false,
    dtsMainSet: null,
    svcAggregatorId,
    isTestCard: false,
  };
  await cardsCollection(db).insertOne(card);
  logger.info('condor card added', { svcAggregatorId, customerId, cardId });
  const designFromData =
    typeof (attributes.additionalData as { designId?: unknown } | null)?.designId === 'string'
      ? (attributes.additionalData as { designId: string }).designId
      : designId;
  return {
    last_four: lastFour,
    status: card.status,
    program_id: productID,
    name_on_card: card.name_on_card!,
    available_balance: '0.00',
    currency_code: 'USD',
    cardId,
    additional_data: {
      account_number: account.accountNumber,
      issue_date: now.toISOString().slice(0, 10),
      design_id: designId,
      designId: designFromData,
      card_expiration: `${String(expiry.getUTCMonth() + 1).padStart(2, '0')}${expiry.getUTCFullYear()}`,
      processor_token: `ptk_${randomBytes(16).toString('hex')}`,
      routing_number: account.routingNumber,
      accountId: account.SvcAccountId,
    },
  };
}

import { requireAggregator, requireService, requireUser } from '../../../../platform/security/authorize.js';
import { deliveriesCollection, enableEndpoint } from '../../../../platform/messaging/deliveries.js';
import { appError, ErrorCode } from '../../../../platform/graphql/errors.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';
import { addCondorCard } from '../condor.js';
import { webhookConfigsCollection } from '../datasources/cards.js';
import { runSandbox } from '../sandbox.js';
import { configureWebhook } from '../webhook-config.js';

export const Mutation: MutationResolvers = {
  modifyCard: async (_parent, { SvcCardId, input }, { principal, management }) => {
    const userId = requireUser(principal);
    return { success: true, card: await management.modify(userId, SvcCardId, input), userId };
  },
  setCardStatus: async (_parent, { SvcCardId, onoff }, { principal, management }) => {
    const userId = requireUser(principal);
    const card = await management.setStatus(userId, SvcCardId, onoff);
    return { success: true, status: card.status, isActive: card.isActive, card, userId };
  },
  authorizeCardMessage: (_parent, { input }, { principal, authorizer }) => {
    // Card messages come from the card processor's link, an internal service.
    requireService(principal, ['card-processor']);
    return authorizer.decide(input);
  },
  resendCardWebhookDelivery: async (_parent, { deliveryId }, { principal, db, deliveries }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'write');
    const delivery = await deliveriesCollection(db).findOne({ _id: deliveryId });
    if (!delivery || delivery.svcAggregatorId !== svcAggregatorId) throw appError(ErrorCode.NOT_FOUND, `Delivery ${deliveryId} does not exist.`, { field: 'deliveryId' });
    return deliveries.resend(deliveryId);
  },
  enableCardWebhook: async (_parent, _args, { principal, db, deliveries }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'write');
    await enableEndpoint(webhookConfigsCollection(db), svcAggregatorId);
    await deliveries.resume({ svcAggregatorId });
    return true;
  },
  // An aggregator configures its own webhook; operators use `npm run provision -- webhook`.
  configureWebhook: (_parent, { input }, { principal, db, logger, config, audit }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'write');
    // Card data goes to an outside party: over TLS, unless internal targets are allowed (development).
    if (input.svcAggregatorId && input.svcAggregatorId !== svcAggregatorId) {
      throw appError(ErrorCode.FORBIDDEN, 'An aggregator configures its own webhook only.', { field: 'svcAggregatorId' });
    }
    return configureWebhook(db, logger, audit, svcAggregatorId, input, config.webhookAllowInternal);
  },
  runWebhookSandbox: (_parent, { input }, { principal, db, logger, config }) => runSandbox(db, logger, requireAggregator(principal, 'write').svcAggregatorId, input, config.webhookAllowInternal),
  addCondorCard: (_parent, { input }, { principal, db, graph, logger }) => addCondorCard(db, graph, logger, requireAggregator(principal, 'write').svcAggregatorId, input),
};

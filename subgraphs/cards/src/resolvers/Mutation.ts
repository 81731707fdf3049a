import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { requireAggregator, requireService, requireUser } from '../../../../platform/security/authorize.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';

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
  authorizeCardMessage: (_parent, { input }, { principal, authorizer, logger }) => {
    // Card messages come from the card processor's link, an internal service.
    requireService(principal, ['card-processor']);
    return authorizer.decide(input, logger);
  },
  resendCardWebhookDelivery: (_parent, { deliveryId }, { principal, webhooks }) =>
    webhooks.resend(requireAggregator(principal, 'write').svcAggregatorId, deliveryId),
  enableCardWebhook: async (_parent, _args, { principal, webhooks }) => {
    await webhooks.enable(requireAggregator(principal, 'write').svcAggregatorId);
    return true;
  },
  // An aggregator configures its own webhook; operators use `npm run provision -- webhook`.
  configureWebhook: (_parent, { input }, { principal, webhooks }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'write');
    // Card data goes to an outside party: over TLS, unless internal targets are allowed (development).
    if (input.svcAggregatorId && input.svcAggregatorId !== svcAggregatorId) {
      throw appError(ErrorCode.FORBIDDEN, 'An aggregator configures its own webhook only.', { field: 'svcAggregatorId' });
    }
    return webhooks.configure(svcAggregatorId, input);
  },
  runWebhookSandbox: (_parent, { input }, { principal, sandbox }) => sandbox(requireAggregator(principal, 'write').svcAggregatorId, input),
  addCondorCard: (_parent, { input }, { principal, condor }) => condor(requireAggregator(principal, 'write').svcAggregatorId, input),
};

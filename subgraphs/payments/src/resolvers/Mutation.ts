import { requireAggregator, requireMerchant, requireService, requireUser } from '../../../../platform/security/authorize.js';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';

/** Card issuing and authorization (the cards subgraph); ACH activity (the ACH processor link, an internal service). */
const CARDS = ['cards'];
const ACH_PROCESSOR = ['ach-processor'];

export const Mutation: MutationResolvers = {
  modifyTransaction: async (_parent, { SvcAccountId, transactionId, changes }, { principal, accountBook }) => ({
    success: true,
    transaction: await accountBook.modify(requireUser(principal), SvcAccountId, transactionId, changes),
  }),
  createBeneficiary: (_parent, { input }, { principal, beneficiaryBook }) => beneficiaryBook.create(requireUser(principal), input),
  modifyBeneficiary: (_parent, { SvcBeneficiaryId, input }, { principal, beneficiaryBook }) =>
    beneficiaryBook.modify(requireUser(principal), SvcBeneficiaryId, input),
  deleteBeneficiary: (_parent, { SvcBeneficiaryId }, { principal, beneficiaryBook }) =>
    beneficiaryBook.delete(requireUser(principal), SvcBeneficiaryId),
  undoBeneficiaryChange: (_parent, { SvcBeneficiaryId, undoId }, { principal, beneficiaryBook }) =>
    beneficiaryBook.undo(requireUser(principal), SvcBeneficiaryId, undoId),
  recordIouTransaction: (_parent, { input }, { principal, ious }) => ious.record(requireUser(principal), input),
  acceptIouTransaction: (_parent, { IOUTransactionId }, { principal, ious }) =>
    ious.settle(requireUser(principal), IOUTransactionId, 'accept'),
  cancelIouTransaction: (_parent, { IOUTransactionId }, { principal, ious }) =>
    ious.settle(requireUser(principal), IOUTransactionId, 'cancel'),
  saveMerchant: (_parent, { input }, { principal, merchantBook }) =>
    merchantBook.save(requireAggregator(principal, 'write').svcAggregatorId, input),
  // A merchant JWT can change links: a confined (read-only) token may not mint one.
  merchantToken: (_parent, { svcMerchantId }, { principal, merchantBook }) =>
    merchantBook.token(requireAggregator(principal, 'write').svcAggregatorId, svcMerchantId),
  customerToken: (_parent, { link }, { links }) => links.customerToken(link),
  createPaymentLink: (_parent, { input }, { principal, links }) => links.create(requireMerchant(principal), input),
  sendPaymentLink: (_parent, { svcTransactionId }, { principal, links }) => links.send(requireMerchant(principal), svcTransactionId),
  cancelPaymentLink: (_parent, { svcTransactionId }, { principal, links }) => links.cancel(requireMerchant(principal), svcTransactionId),
  uploadMerchantLogo: (_parent, { input }, { principal, merchantBook }) => merchantBook.uploadLogo(requireMerchant(principal), input),
  refundPaymentLink: (_parent, { input }, { principal, refunds }) => refunds.issue(requireMerchant(principal), input),
  resendDelivery: async (_parent, { deliveryId }, { principal, deliveryLoader, deliveries }) => {
    // The caller's kind first, so that an unknown id tells a stranger nothing.
    if (principal.kind !== 'merchant') requireAggregator(principal, 'write');
    const delivery = await deliveryLoader.load(deliveryId);
    const allowed =
      delivery &&
      (principal.kind === 'merchant'
        ? principal.svcMerchantId === delivery.svcMerchantId
        : requireAggregator(principal, 'write').svcAggregatorId === delivery.svcAggregatorId);
    if (!delivery || !allowed) throw appError(ErrorCode.NOT_FOUND, `Delivery ${deliveryId} does not exist.`, { field: 'deliveryId' });
    return deliveries.resend(deliveryId);
  },
  enableMerchantWebhook: async (_parent, { svcMerchantId }, { principal, merchantBook, deliveries }) => {
    const merchant = await merchantBook.enableWebhook(requireAggregator(principal, 'write').svcAggregatorId, svcMerchantId);
    await deliveries.resume({ svcMerchantId });
    return merchant;
  },
  recordCardTransaction: (_parent, { input }, { principal, accountBook }) => {
    requireService(principal, CARDS);
    return accountBook.recordCardTransaction(input);
  },
  recordCardTransactions: (_parent, { input }, { principal, accountBook }) => {
    requireService(principal, CARDS);
    return accountBook.recordCardTransactions(input);
  },
  holdCardFunds: (_parent, { input }, { principal, accountBook }) => {
    requireService(principal, CARDS);
    return accountBook.holdCardFunds(input);
  },
  releaseCardHolds: (_parent, { input, undo }, { principal, accountBook }) => {
    requireService(principal, CARDS);
    return accountBook.releaseCardHolds(input, undo);
  },
  openCheckingAccount: (_parent, { SvcUserId, currency }, { principal, accountBook }) => {
    requireService(principal, CARDS);
    return accountBook.openChecking(SvcUserId, currency);
  },
  recordAchDebit: (_parent, { input }, { principal, ach }) => {
    requireService(principal, ACH_PROCESSOR);
    return ach.recordDebit(input);
  },
  recordAchReturn: (_parent, { input }, { principal, ach }) => {
    requireService(principal, ACH_PROCESSOR);
    return ach.recordReturn(input);
  },
  recordAchSettlement: (_parent, { svcTransactionId }, { principal, ach }) => {
    requireService(principal, ACH_PROCESSOR);
    return ach.recordSettlement(svcTransactionId);
  },
};

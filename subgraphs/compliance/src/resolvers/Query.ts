import { AuditCursorError, readAuditLog } from '../audit/audit-log.js';
import { COMPLIANCE_LIST_CAPS } from '../list-caps.js';
import { requireAggregator, requireService } from '../../../../platform/security/authorize.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkString, ID_RULE } from '../../../../platform/security/validate.js';
import type { QueryResolvers } from '../__generated__/resolvers-types.js';
import { offsetConnection } from '../../../../platform/graphql/paging.js';
import { evaluate } from '../../../../platform/domain/restrictions.js';
import { checkAmount, isCurrencyCode } from '../../../../platform/money/money.js';
import { applicationView } from '../kyc/kyc.js';

/** The internal services that may export the rules: card authorization's read model, and operators. */
const RULE_READERS = ['cards', 'operator'];
/** Users per export by id: what a burst of events names, not a whole population. */
const MAX_RULE_USERS = COMPLIANCE_LIST_CAPS['Query.restrictionRules(SvcUserIds:)'];

export const Query: QueryResolvers = {
  transactionTypes: (_parent, _args, { transactionTypes }) => transactionTypes(),
  evaluateTransaction: async (_parent, { input }, { principal, effectiveRestrictions, proceduralOfUser, transactionTypes }) => {
    let SvcUserId: string;
    // A service key reaches this only where its scope names it (the operator's, checking the rules it writes).
    if (principal.kind === 'service') {
      SvcUserId = checkString(input.SvcUserId ?? '', 'SvcUserId', ID_RULE)!;
    } else if (principal.kind === 'user') {
      if (input.SvcUserId && input.SvcUserId !== principal.userId)
        throw appError(ErrorCode.FORBIDDEN, 'An end user evaluates only their own transactions.', { field: 'SvcUserId' });
      SvcUserId = principal.userId;
    } else {
      throw appError(ErrorCode.UNAUTHENTICATED, 'Evaluating a transaction needs an end-user token or an internal service.');
    }
    if (!isCurrencyCode(input.currency))
      throw appError(ErrorCode.VALIDATION_FAILED, 'currency must be an ISO 4217 currency code.', { field: 'currency' });
    const amount = checkAmount(input.amount, input.currency, 'amount');
    const [types, restrictions, procedural] = await Promise.all([
      transactionTypes(),
      effectiveRestrictions(SvcUserId),
      proceduralOfUser.load(SvcUserId),
    ]);
    return evaluate({ ...input, amount }, procedural, types.find((t) => t.name === input.txnType) ?? null, restrictions);
  },
  application: async (_parent, { applicationId }, { principal, applications }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'read');
    const application = await applications.load(applicationId);
    return application && application.svcAggregatorId === svcAggregatorId ? applicationView(application) : null;
  },
  applications: (_parent, { input }, { principal, kyc }) => kyc.list(requireAggregator(principal, 'read').svcAggregatorId, input),
  applicationsConnection: (_parent, { customerId, dateCreateFrom, dateCreateTo, ...args }, { principal, kyc }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'read');
    return offsetConnection(args, (page) => kyc.list(svcAggregatorId, { customerId, dateCreateFrom, dateCreateTo, ...page }));
  },
  auditLog: async (_parent, { first, after, ...filter }, { principal, auditLog }) => {
    requireService(principal, ['operator']);
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a client may send first: null, which the default does not replace.
    const size = first ?? 50;
    if (!Number.isInteger(size) || size < 1 || size > 500)
      throw appError(ErrorCode.VALIDATION_FAILED, 'first must be an integer from 1 to 500.', { field: 'first' });
    for (const field of ['actorId', 'subjectId'] as const) checkString(filter[field], field, { max: 200 });
    try {
      const { records, hasNextPage } = await readAuditLog(auditLog, filter, { first: size, after });
      return { records, hasNextPage, endCursor: records.at(-1)?.cursor ?? null };
    } catch (error) {
      if (error instanceof AuditCursorError) throw appError(ErrorCode.VALIDATION_FAILED, error.message, { field: 'after' });
      throw error;
    }
  },
  restrictionRules: (_parent, { SvcUserIds }, { principal, restrictionRules }) => {
    // Card authorization's read model, and operators checking what it was given.
    requireService(principal, RULE_READERS);
    if (SvcUserIds && (SvcUserIds.length < 1 || SvcUserIds.length > MAX_RULE_USERS)) {
      throw appError(ErrorCode.VALIDATION_FAILED, `SvcUserIds holds 1-${MAX_RULE_USERS} ids; leave it out for every user.`, {
        field: 'SvcUserIds',
      });
    }
    SvcUserIds?.forEach((SvcUserId, index) => checkString(SvcUserId, `SvcUserIds[${index}]`, ID_RULE));
    return restrictionRules(SvcUserIds ?? null);
  },
  achReturnRates: (_parent, { input }, { principal, returnRates }) =>
    returnRates.list(requireAggregator(principal, 'read').svcAggregatorId, input),
  achReturnRatesConnection: (_parent, { date, ...args }, { principal, returnRates }) => {
    const { svcAggregatorId } = requireAggregator(principal, 'read');
    return offsetConnection(args, (page) => returnRates.list(svcAggregatorId, { date, ...page }));
  },
};

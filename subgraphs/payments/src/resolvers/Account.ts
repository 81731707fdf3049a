import { maySeeUser } from '../../../../platform/security/authorize.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { fromMinor } from '../../../../platform/money/money.js';
import { maskLastFour } from '../../../../platform/security/masking.js';
import type { AccountResolvers } from '../__generated__/resolvers-types.js';
import { encodeCursor, pageKey } from '../accounts/transactions-datasource.js';

export const Account: AccountResolvers = {
  id: (parent) => globalId('Account', parent.SvcAccountId),
  __resolveReference: async (reference, { accounts, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const SvcAccountId = ownKey(reference, 'Account', 'SvcAccountId');
    if (SvcAccountId === null) return null;
    const account = await accounts.load(SvcAccountId);
    return account && maySeeUser(principal, account.SvcUserId) ? account : null;
  },
  accountNumber: (account) => maskLastFour(account.accountNumberLastFour) ?? '****',
  user: (account) => ({ SvcUserId: account.SvcUserId }),
  balance: (account) => fromMinor(account.balance, account.currency),
  availableBalance: (account) => fromMinor(account.availableBalance, account.currency),
  transactions: async (account, { first, after, filter }, { transactionPages }) => {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a client may send first: null, which the default does not replace.
    const page = await transactionPages.load(pageKey(account, first ?? 30, after, filter));
    const edges = page.nodes.map((node) => ({ cursor: encodeCursor(node), node }));
    return {
      edges,
      pageInfo: {
        hasNextPage: page.hasNextPage,
        hasPreviousPage: Boolean(after),
        startCursor: edges[0]?.cursor ?? null,
        endCursor: edges.at(-1)?.cursor ?? null,
      },
    };
  },
};

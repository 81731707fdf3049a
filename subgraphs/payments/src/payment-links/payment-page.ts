import { fromMinor } from '../../../../platform/money/money.js';
import type { MerchantDocument } from '../merchants/datasource.js';
import type { PaymentLinkDocument } from './datasource.js';

/** Escapes text for HTML element content and quoted attribute values. */
function escapeHtml(value: string | null | undefined): string {
  return (value ?? '').replace(/[&<>"'`=/]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The payment page of a sent link, as one self-contained HTML document (no scripts, no outside
 * resources): what a merchant's webhook receives to host or forward. Every value from the link
 * or the merchant is escaped; the pay button's URL is an http(s) URL or omitted.
 */
export function paymentPageHtml(link: PaymentLinkDocument, merchant: Pick<MerchantDocument, 'name'>): string {
  const amount = `${fromMinor(link.amount, link.currency)} ${link.currency}`;
  const row = (label: string, value: string | null | undefined) =>
    value === null || value === undefined || value === '' ? '' : `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`;
  const safeUrl = link.url && /^https?:\/\//i.test(link.url) ? link.url : null;
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>Pay ${escapeHtml(merchant.name)}</title>`,
    '<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse;width:100%}th{text-align:left;padding:.25rem 1rem .25rem 0;color:#555}a.pay{display:inline-block;margin-top:1rem;padding:.75rem 1.5rem;background:#0b5;color:#fff;border-radius:.4rem;text-decoration:none}</style>',
    '</head><body>',
    `<h1>${escapeHtml(merchant.name)}</h1>`,
    `<p class="amount">${escapeHtml(amount)}</p>`,
    link.description ? `<p class="description">${escapeHtml(link.description)}</p>` : '',
    '<table>',
    row('Payer', link.payerName),
    row('Invoice', link.invoiceNumber),
    row('Due date', link.dueDate),
    row('Reference', link.svcMerchantRef),
    row('Pay with', link.availablePaymentType.join(', ')),
    row('Expires', link.dtsExpiredAt?.toISOString()),
    ...link.fields.map((field) => row(field.label, field.value)),
    '</table>',
    safeUrl ? `<a class="pay" href="${escapeHtml(safeUrl)}">Pay ${escapeHtml(amount)}</a>` : '',
    '</body></html>',
  ]
    .filter(Boolean)
    .join('\n');
}

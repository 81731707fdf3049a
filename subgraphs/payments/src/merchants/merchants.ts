import { enableEndpoint } from '../../../../platform/messaging/deliveries.js';
import { GridFSBucket, type Db } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { detectFileType, storeFile } from '../../../../platform/mongo/files.js';
import { PAYMENT_JWT_LIFETIME_SECONDS, signJwt } from '../../../../platform/security/jwt.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { insertIfAbsent } from '../../../../platform/mongo/mongo.js';
import { newId } from '../../../../platform/security/secrets.js';
import { checkString, ID_RULE, required } from '../../../../platform/security/validate.js';
import { checkWebhookTarget, newWebhookSecret } from '../../../../platform/messaging/webhooks.js';
import { merchantsCollection, type MerchantDocument } from './datasource.js';

/** Logo types of a merchant (the spec: "such as light, dark, big, small"). */
export const LOGO_TYPES = ['light', 'dark', 'big', 'small'] as const;
/** Largest logo accepted. */
const MAX_LOGO_BYTES = 1024 * 1024;

/** A webhook URL as configured (see `checkWebhookTarget`), or null when none is given. */
export async function checkWebhookUrl(value: unknown, field: string, allowInternal: boolean): Promise<string | null> {
  const text = checkString(value, field, { max: 2000 });
  return text ? checkWebhookTarget(text, field, allowInternal) : null;
}

/**
 * The refusal of a merchant id in use by another aggregator. Ids are global (docs/security.md says
 * why): the answer says the id cannot be had, never by whom or since when, and registrations count
 * against the strict rate limit of the fields that guess.
 */
const merchantIdUnavailable = (svcMerchantId: string) =>
  appError(ErrorCode.CONFLICT, `svcMerchantId ${svcMerchantId} is not available; choose another.`, { field: 'svcMerchantId' });

/** Merchants of aggregators: registration, their JWTs and their logos. */
export class Merchants {
  constructor(
    private readonly db: Db,
    private readonly jwtSecret: string,
    private readonly logger: Logger,
    private readonly allowInternalWebhooks: boolean,
    private readonly audit: AuditTrail,
  ) {}

  /** The aggregator's merchant, or NOT_FOUND (another aggregator's merchant answers the same). */
  async ofAggregator(svcAggregatorId: string, svcMerchantId: string): Promise<MerchantDocument> {
    const merchant = await merchantsCollection(this.db).findOne({ _id: svcMerchantId });
    if (!merchant || merchant.svcAggregatorId !== svcAggregatorId)
      throw appError(ErrorCode.NOT_FOUND, `Merchant ${svcMerchantId} does not exist.`, { field: 'svcMerchantId' });
    return merchant;
  }

  /** The aggregator's merchants, by id. */
  listOf(svcAggregatorId: string): Promise<MerchantDocument[]> {
    return merchantsCollection(this.db).find({ svcAggregatorId }).sort({ _id: 1 }).toArray();
  }

  /** Enables the aggregator's merchant's webhook after a run of failures disabled it; answers the merchant as it is now. */
  async enableWebhook(svcAggregatorId: string, svcMerchantId: string): Promise<MerchantDocument> {
    await this.ofAggregator(svcAggregatorId, svcMerchantId);
    await enableEndpoint(merchantsCollection(this.db), svcMerchantId);
    return this.ofAggregator(svcAggregatorId, svcMerchantId);
  }

  /** Registers a merchant or changes one; a secret is generated for a new merchant or on rotation and returned once. */
  async save(
    svcAggregatorId: string,
    input: {
      svcMerchantId?: string | null;
      name?: string | null;
      linkDelivery?: string | null;
      webhookUrl?: string | null;
      rotateSecret?: boolean | null;
    },
  ) {
    const svcMerchantId = checkString(required(input.svcMerchantId, 'svcMerchantId'), 'svcMerchantId', ID_RULE)!;
    const merchants = merchantsCollection(this.db);
    const existing = await merchants.findOne({ _id: svcMerchantId });
    if (existing && existing.svcAggregatorId !== svcAggregatorId) throw merchantIdUnavailable(svcMerchantId);
    const name =
      checkString(existing ? input.name : required(input.name, 'name'), 'name', { min: 1, max: 100, safeText: true }) ?? existing?.name;
    const linkDelivery = input.linkDelivery ?? existing?.linkDelivery ?? 'email';
    if (linkDelivery !== 'email' && linkDelivery !== 'webhook')
      throw appError(ErrorCode.VALIDATION_FAILED, 'linkDelivery must be email or webhook.', { field: 'linkDelivery' });
    const webhookUrl =
      input.webhookUrl === undefined
        ? (existing?.webhookUrl ?? null)
        : await checkWebhookUrl(input.webhookUrl, 'webhookUrl', this.allowInternalWebhooks);
    if (linkDelivery === 'webhook' && !webhookUrl)
      throw appError(ErrorCode.VALIDATION_FAILED, 'webhookUrl is required for webhook delivery.', { field: 'webhookUrl' });
    const secret = !existing || input.rotateSecret ? newWebhookSecret() : null;
    const now = new Date();
    const settings = {
      name: name!,
      linkDelivery,
      webhookUrl,
      dtsUpdatedAt: now,
      ...(secret ? { webhookSecret: secret } : {}),
    } satisfies Partial<MerchantDocument>;
    const created =
      !existing &&
      (await insertIfAbsent(merchants, {
        _id: svcMerchantId,
        svcMerchantId,
        svcAggregatorId,
        logos: {},
        dtsCreatedAt: now,
        webhookSecret: secret!,
        ...settings,
      }));
    // Changed, or registered by a racing request a moment ago (then only by the same aggregator).
    // A racing registration that lost the insert must not replace the winner's secret.
    const { webhookSecret: _lost, ...withoutSecret } = settings;
    const update = existing ? settings : withoutSecret;
    const merchant = created
      ? await merchants.findOne({ _id: svcMerchantId })
      : await merchants.findOneAndUpdate({ _id: svcMerchantId, svcAggregatorId }, { $set: update }, { returnDocument: 'after' });
    if (!merchant) throw merchantIdUnavailable(svcMerchantId);
    this.logger.info('merchant saved', { svcAggregatorId, svcMerchantId, linkDelivery, secretRotated: Boolean(secret) });
    // What happened: registered (this request's insert won), or changed (a lost race updates without the secret).
    const secretSet = Boolean(secret) && (created || Boolean(existing));
    if (created || secretSet || existing?.linkDelivery !== merchant.linkDelivery || existing.webhookUrl !== merchant.webhookUrl) {
      // The origin only: a path or query may carry the receiver's own token.
      const origin = merchant.webhookUrl ? new URL(merchant.webhookUrl).origin : null;
      await this.audit.record(
        'WEBHOOK_CONFIGURED',
        { type: 'merchant', id: svcMerchantId },
        { svcAggregatorId, linkDelivery: merchant.linkDelivery, origin, secretRotated: secretSet, registered: created },
      );
    }
    return { merchant, webhookSecret: created || existing ? secret : null };
  }

  /** A merchant JWT for the aggregator's merchant. */
  async token(svcAggregatorId: string, svcMerchantId: string | null | undefined) {
    const id = checkString(required(svcMerchantId, 'svcMerchantId'), 'svcMerchantId', ID_RULE)!;
    await this.ofAggregator(svcAggregatorId, id);
    await this.audit.record(
      'TOKEN_ISSUED',
      { type: 'merchant', id },
      { kind: 'merchant', owner: id, svcAggregatorId, expiresIn: PAYMENT_JWT_LIFETIME_SECONDS },
    );
    return {
      expiresIn: PAYMENT_JWT_LIFETIME_SECONDS,
      token: await signJwt({ typ: 'merchant', sub: id, agg: svcAggregatorId }, this.jwtSecret),
    };
  }

  /** Stores a logo in GridFS (bucket `logos`) and points the merchant's logo of that type at it; the replaced file is removed. */
  async uploadLogo(
    merchant: { svcAggregatorId: string; svcMerchantId: string },
    input: { type?: string | null; contentBase64?: string | null; fileName?: string | null },
  ) {
    const type = required(input.type, 'type');
    if (!(LOGO_TYPES as readonly string[]).includes(type))
      throw appError(ErrorCode.VALIDATION_FAILED, `type must be one of ${LOGO_TYPES.join(', ')}.`, { field: 'type' });
    const bytes = Buffer.from(required(input.contentBase64, 'file'), 'base64');
    if (bytes.length === 0) throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'The file is empty.', { field: 'file' });
    if (bytes.length > MAX_LOGO_BYTES)
      throw appError(ErrorCode.PAYLOAD_TOO_LARGE, `A logo may be at most ${MAX_LOGO_BYTES} bytes.`, { field: 'file' });
    const contentType = detectFileType(bytes, ['image/png', 'image/jpeg', 'image/gif']);
    if (!contentType)
      throw appError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'A logo must be a PNG, JPEG or GIF image (checked by its content).', {
        field: 'file',
      });
    const current = await this.ofAggregator(merchant.svcAggregatorId, merchant.svcMerchantId);
    const logoId = newId('logo_');
    const bucket = new GridFSBucket(this.db, { bucketName: 'logos' });
    await storeFile(bucket, logoId, input.fileName ?? `${type}-logo`, bytes, { svcMerchantId: current.svcMerchantId, type, contentType });
    const before = await merchantsCollection(this.db).findOneAndUpdate(
      { _id: current._id },
      { $set: { [`logos.${type}`]: logoId, dtsUpdatedAt: new Date() } },
    );
    const replaced = before?.logos[type];
    if (replaced) await bucket.delete(replaced as never).catch(() => undefined);
    return { logoId };
  }
}

import type { Collection } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkString, required } from '../../../../platform/security/validate.js';
import type { AlertSettingDocument } from './datasource.js';

/** The known alert types: the catalogue every user's list is made from. */
export const ALERT_CATALOGUE = [
  {
    alertTypeId: 'alert1',
    category: 'general',
    name: 'Card payment',
    descriptionOn: 'You are told about every card payment.',
    descriptionOff: 'You are not told about card payments.',
  },
  {
    alertTypeId: 'alert2',
    category: 'general',
    name: 'Incoming transfer',
    descriptionOn: 'You are told when money arrives.',
    descriptionOff: 'You are not told when money arrives.',
  },
  {
    alertTypeId: 'alert21',
    category: 'general',
    name: 'Low balance',
    descriptionOn: 'You are told when the balance falls below your threshold.',
    descriptionOff: 'You are not told about a low balance.',
  },
  {
    alertTypeId: 'alert4',
    category: 'general',
    name: 'Declined transaction',
    descriptionOn: 'You are told when a transaction is declined.',
    descriptionOff: 'You are not told about declined transactions.',
  },
  { alertTypeId: 'summaryReportsMonthly', category: 'summaryReports', name: 'Monthly summary', descriptionOn: null, descriptionOff: null },
  {
    alertTypeId: 'summaryReportsQuarterly',
    category: 'summaryReports',
    name: 'Quarterly summary',
    descriptionOn: null,
    descriptionOff: null,
  },
  { alertTypeId: 'summaryReportsAnnually', category: 'summaryReports', name: 'Annual summary', descriptionOn: null, descriptionOff: null },
] as const;

/** An alert as the spec's Alert resource shows it. */
export interface AlertView {
  alertTypeId: (typeof ALERT_CATALOGUE)[number]['alertTypeId'];
  category: (typeof ALERT_CATALOGUE)[number]['category'];
  name: string;
  isEnabled: boolean | null;
  parameters: Record<string, unknown> | null;
  descriptionOn?: string;
  descriptionOff?: string;
  dtsModified?: Date;
}

export interface AlertRequest {
  alertTypeId?: string | null;
  category?: string | null;
  name?: string | null;
  isEnabled?: boolean | null;
  parameters?: Record<string, unknown> | null;
}

/** Alert subscriptions: the catalogue merged with each user's settings. */
export class Alerts {
  constructor(private readonly settings: Collection<AlertSettingDocument>) {}

  /** The full current list: every known type, with the user's settings; `dtsModified` on the ones the user changed. */
  async list(SvcUserId: string): Promise<AlertView[]> {
    const settings = new Map((await this.settings.find({ SvcUserId }).toArray()).map((s) => [s.alertTypeId, s]));
    return ALERT_CATALOGUE.map((type) => {
      const setting = settings.get(type.alertTypeId);
      return {
        alertTypeId: type.alertTypeId,
        category: type.category,
        name: type.name,
        isEnabled: setting ? setting.isEnabled : false,
        parameters: setting?.parameters ?? null,
        ...(type.descriptionOn ? { descriptionOn: type.descriptionOn, descriptionOff: type.descriptionOff } : {}),
        ...(setting ? { dtsModified: setting.dtsModified } : {}),
      };
    });
  }

  /**
   * Applies the device's list: `isEnabled` and `parameters` of known types change (category and
   * name belong to the catalogue); unknown alertTypeIds are ignored. The whole list is checked
   * before anything is written.
   */
  async sync(SvcUserId: string, alerts: AlertRequest[]): Promise<AlertView[]> {
    const known = new Set<string>(ALERT_CATALOGUE.map((t) => t.alertTypeId));
    const checked = alerts.map((alert, i) => {
      const alertTypeId = checkString(required(alert.alertTypeId, `[${i}].alertTypeId`), `[${i}].alertTypeId`, { max: 64 })!;
      checkString(alert.category, `[${i}].category`, { max: 64 });
      checkString(alert.name, `[${i}].name`, { max: 100 });
      if (alert.parameters !== undefined && alert.parameters !== null && JSON.stringify(alert.parameters).length > 2000) {
        throw appError(ErrorCode.VALIDATION_FAILED, `[${i}].parameters must be at most 2000 characters of JSON.`, {
          field: `[${i}].parameters`,
        });
      }
      return { ...alert, alertTypeId };
    });
    const current = new Map((await this.settings.find({ SvcUserId }).toArray()).map((s) => [s.alertTypeId, s]));
    const now = new Date();
    for (const alert of checked) {
      if (!known.has(alert.alertTypeId)) continue;
      const before = current.get(alert.alertTypeId);
      const isEnabled = alert.isEnabled === undefined ? (before?.isEnabled ?? false) : alert.isEnabled;
      const parameters = alert.parameters === undefined ? (before?.parameters ?? null) : alert.parameters;
      const changed =
        (before?.isEnabled ?? false) !== isEnabled || JSON.stringify(before?.parameters ?? null) !== JSON.stringify(parameters);
      if (!changed) continue;
      await this.settings.updateOne(
        { _id: `${SvcUserId}:${alert.alertTypeId}` },
        { $set: { SvcUserId, alertTypeId: alert.alertTypeId, isEnabled, parameters, dtsModified: now } },
        { upsert: true },
      );
    }
    return this.list(SvcUserId);
  }
}

/** Generated at build time from the server's own lists (scripts/build-console.mjs). */
declare module 'netkeep:catalogue' {
  export interface CatalogueField {
    readonly name: string;
    /** text, flag, port, time, json (and any kind the server adds later). */
    readonly kind: string;
    readonly editable: boolean;
    readonly description: string;
    readonly default: unknown;
  }
  export const fields: readonly CatalogueField[];
  /** The fields a bulk edit (POST /devices/bulk) may set. */
  export const bulkFields: readonly string[];
  export const eventTypes: readonly string[];
  export const sortColumns: readonly string[];
  export const listStatuses: readonly string[];
  export const deviceGroups: readonly string[];
  export const totalsNames: Readonly<Record<string, string>>;
  export const periods: readonly string[];
}

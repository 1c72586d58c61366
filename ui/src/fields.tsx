/**
 * The device fields as a form shows them: their labels and groups, the text an input holds for a
 * stored value and back, and one labelled input per field kind. The device page, "add device" and
 * the list's bulk edit share them. Times are shown and edited in the browser's zone
 * (`datetime-local`); the API keeps ISO 8601 UTC.
 */
import { fields, type CatalogueField } from 'netkeep:catalogue';

/** `YYYY-MM-DDTHH:MM:SS` of `date` in the browser's zone: what a `datetime-local` input holds. */
export function localInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** The browser's time zone, as the form names it. */
export function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "the browser's zone";
}

/** How the form groups the catalogue's fields; a field not named here goes into "More". */
export const groups: readonly { title: string; names: readonly string[] }[] = [
  {
    title: 'About',
    names: [
      'devName',
      'devOwner',
      'devType',
      'devVendor',
      'devGroup',
      'devLocation',
      'devFavorite',
      'devComments',
    ],
  },
  {
    title: 'Network',
    names: [
      'devLastIP',
      'devStaticIP',
      'devFQDN',
      'devSite',
      'devSSID',
      'devParentMAC',
      'devParentPort',
      'devParentRelType',
      'devReqNicsOnline',
    ],
  },
  {
    title: 'Scanning and alerts',
    names: [
      'devScan',
      'devLogEvents',
      'devAlertEvents',
      'devAlertDown',
      'devSkipRepeated',
      'devCanSleep',
      'devMissesBeforeAbsent',
      'devWatchPorts',
      'devIsNew',
      'devIsArchived',
    ],
  },
];

export const labels: Readonly<Record<string, string>> = {
  devName: 'Name',
  devOwner: 'Owner',
  devType: 'Type',
  devVendor: 'Vendor',
  devGroup: 'Group',
  devLocation: 'Location',
  devFavorite: 'Favorite',
  devComments: 'Comments',
  devLastIP: 'Last IP address',
  devStaticIP: 'Static IP address',
  devFQDN: 'FQDN',
  devSite: 'Site',
  devSSID: 'Wi-Fi network (SSID)',
  devParentMAC: 'Parent MAC',
  devParentPort: 'Parent port',
  devParentRelType: 'Relation to parent',
  devReqNicsOnline: 'Requires all NICs on-line',
  devScan: 'Watch with presence scanning',
  devLogEvents: 'Log connection events',
  devAlertEvents: 'Alert on events',
  devAlertDown: 'Alert when down',
  devSkipRepeated: 'Skip repeated notifications',
  devWatchPorts: 'Watch open ports',
  devIsNew: 'New (not yet reviewed)',
  devIsArchived: 'Archived',
  devCanSleep: 'May sleep (stays present while unseen for SLEEP_MINUTES)',
  devMissesBeforeAbsent: 'Missed scans before absent (0: the global setting)',
  devFirstConnection: 'First seen',
  devLastConnection: 'Last seen',
  devLastNotification: 'Last notification',
  devPresentLastScan: 'Present in the last scan',
  devIcon: 'Icon',
  devSyncHubNode: 'Sync hub node',
  devSourcePlugin: 'Discovered by',
  devCustomProps: 'Custom properties (JSON array)',
};

/** Fields whose catalogue description says more than their label (shown under the input). */
const hinted = new Set([
  'devVendor',
  'devParentRelType',
  'devIcon',
  'devSkipRepeated',
  'devParentMAC',
  'devMissesBeforeAbsent',
]);

export const editable = fields.filter((f) => f.editable);
export const grouped = [
  ...groups.map((g) => ({
    title: g.title,
    fields: g.names.map((n) => editable.find((f) => f.name === n)).filter((f): f is CatalogueField => !!f),
  })),
  {
    title: 'More',
    fields: editable.filter((f) => !groups.some((g) => g.names.includes(f.name))),
  },
];

/** The text an input shows for a stored value. */
export function toInput(field: CatalogueField, value: unknown): string | boolean {
  if (field.kind === 'flag') return value === 1 || value === true;
  if (field.kind === 'json') return JSON.stringify(value ?? [], null, 2);
  if (field.kind === 'time')
    return typeof value === 'string' && value !== '' ? localInput(new Date(value)) : '';
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  return value === null || value === undefined ? '' : JSON.stringify(value);
}

/** The JSON value to send for an input's text, or an Error naming the field. */
export function fromInput(field: CatalogueField, input: string | boolean): unknown {
  const label = labels[field.name] ?? field.name;
  if (field.kind === 'flag') return input ? 1 : 0;
  const text = String(input);
  if (field.kind === 'json') {
    try {
      return JSON.parse(text || '[]') as unknown;
    } catch {
      throw new Error(`${label} must be valid JSON (an array of objects).`);
    }
  }
  if (field.kind === 'port' || (field.kind !== 'text' && typeof field.default === 'number')) {
    if (text.trim() === '') return field.kind === 'port' ? null : 0;
    const n = Number(text);
    if (!Number.isInteger(n)) throw new Error(`${label} must be a whole number.`);
    return n;
  }
  if (field.kind === 'time') {
    if (text.trim() === '') return null;
    // `YYYY-MM-DDTHH:MM[:SS]` without a zone is read as the browser's local time.
    const date = new Date(text.trim());
    if (Number.isNaN(date.getTime())) throw new Error(`${label} is not a date and time.`);
    return date.toISOString().replace('.000Z', 'Z');
  }
  return text;
}

export function FieldInput(props: {
  readonly field: CatalogueField;
  readonly value: string | boolean;
  readonly onChange: (value: string | boolean) => void;
  /** Prefix of the input's id, for a second form of the same fields on one page. */
  readonly idPrefix?: string;
}) {
  const { field, value, onChange } = props;
  const id = `${props.idPrefix ?? 'field'}-${field.name}`;
  const label = labels[field.name] ?? field.name;
  if (field.kind === 'flag')
    return (
      <div class="field check">
        <input
          id={id}
          type="checkbox"
          checked={value === true}
          onChange={(e) => {
            onChange(e.currentTarget.checked);
          }}
        />
        <label for={id} title={field.description}>
          {label}
        </label>
      </div>
    );
  const hint =
    field.kind === 'time'
      ? `Your local time (${localZone()}).`
      : hinted.has(field.name) || field.kind === 'json'
        ? field.description
        : undefined;
  const common = {
    id,
    value: String(value),
    onInput: (e: { currentTarget: { value: string } }) => {
      onChange(e.currentTarget.value);
    },
    title: field.description,
    'aria-describedby': hint === undefined ? undefined : `${id}-hint`,
  };
  const numeric = field.kind === 'port' || (field.kind !== 'text' && typeof field.default === 'number');
  return (
    <div class={`field${field.kind === 'json' || field.name === 'devComments' ? ' full' : ''}`}>
      <label for={id}>{label}</label>
      {field.kind === 'json' || field.name === 'devComments' ? (
        <textarea
          {...common}
          rows={field.kind === 'json' ? 4 : 3}
          class={field.kind === 'json' ? 'mono' : undefined}
        />
      ) : field.kind === 'time' ? (
        <input {...common} type="datetime-local" step={1} />
      ) : numeric ? (
        <input {...common} type="number" inputMode="numeric" />
      ) : (
        <input {...common} type="text" />
      )}
      {hint !== undefined && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** Every editable field as an input, in the groups of `grouped`, one fieldset each. */
export function FieldGroups(props: {
  readonly values: Readonly<Record<string, string | boolean>>;
  readonly onChange: (name: string, value: string | boolean) => void;
}) {
  return (
    <>
      {grouped.map((g) => (
        <fieldset key={g.title}>
          <legend>{g.title}</legend>
          <div class="grid">
            {g.fields.map((f) => (
              <FieldInput
                key={f.name}
                field={f}
                value={props.values[f.name] ?? ''}
                onChange={(v) => {
                  props.onChange(f.name, v);
                }}
              />
            ))}
          </div>
        </fieldset>
      ))}
    </>
  );
}

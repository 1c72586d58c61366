/**
 * PostgreSQL's text cannot hold the NUL character (U+0000); SQLite's can, and keeps it verbatim.
 * A device write carrying one is refused before it reaches PostgreSQL, with a 400 naming the field
 * (docs/postgresql.md lists this difference), rather than failing inside the transaction as an
 * unexpected error (500) that, in a group of writes, would take the others down with it.
 */
import { DomainError } from '../../errors.js';

/** Throws `invalid` (NUL_CHARACTER) when a text value among `columns` holds U+0000. */
export function refuseNul(columns: Readonly<Record<string, unknown>>, mac?: string): void {
  for (const [name, value] of Object.entries(columns)) {
    if (typeof value === 'string' && value.includes('\u0000'))
      throw new DomainError(
        'invalid',
        `'${name}'${mac === undefined ? '' : ` of ${mac}`} holds the NUL character (U+0000), which a PostgreSQL store cannot keep`,
        { code: 'NUL_CHARACTER' },
      );
  }
}

/**
 * Whether a value a read compares with holds U+0000: PostgreSQL refuses it as a parameter, and no
 * text it stores holds one, so such a filter matches nothing (the caller writes FALSE instead).
 */
export function holdsNul(value: string): boolean {
  return value.includes('\u0000');
}

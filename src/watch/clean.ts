/**
 * What a tool's output may leave in a stored value: printable text only. Tool output on the LAN is
 * attacker-controlled (a service banner, a DHCP option), so control and format characters are
 * removed and the length is capped before anything is stored or shown.
 */

/** Longest text kept from a tool's output field. */
export const maxToolText = 120;

/** Printable text: no control, format or unassigned characters, trimmed, at most `max` characters. */
export function cleanText(value: unknown, max = maxToolText): string {
  if (typeof value !== 'string') return '';
  // Code points, not UTF-16 units: a cut never leaves half a surrogate pair.
  return Array.from(value.replace(/[\p{C}]/gu, '').trim())
    .slice(0, max)
    .join('');
}

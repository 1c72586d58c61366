/** A TypeBox helper shared by the route schemas of every feature. */
import { Type } from '@sinclair/typebox';

/** A string schema that only accepts the given values (one `enum`: clear errors, and OpenAPI shows them). */
export function stringEnum<const T extends string>(values: readonly T[], description: string) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], description });
}

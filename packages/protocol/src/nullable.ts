import Type from 'typebox';

/** A value or null: how every schema in rankd says "unknown" or "not yet". */
export const Nullable = <T extends Type.TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

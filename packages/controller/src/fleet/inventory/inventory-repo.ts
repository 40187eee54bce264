// The stored inventory: one document, replaced or merged as a whole on import, so that
// a reader never sees half of an import.
import type { InventoryFormat } from '@rankd/protocol';
import type { Db } from '../../store/database.js';
import type { InventoryDoc } from './model.js';

export interface StoredInventory {
  doc: InventoryDoc;
  source: string;
  format: InventoryFormat;
  importedAt: number;
}

interface Row {
  doc: string;
  source: string;
  format: string;
  imported_at: number;
}

export class InventoryRepo {
  private readonly getStmt;
  private readonly putStmt;
  private readonly deleteStmt;

  constructor(db: Db) {
    this.getStmt = db.prepare('SELECT doc, source, format, imported_at FROM inventory WHERE id = 1');
    this.putStmt = db.prepare(`
      INSERT INTO inventory (id, doc, source, format, imported_at) VALUES (1, @doc, @source, @format, @importedAt)
      ON CONFLICT(id) DO UPDATE SET doc = excluded.doc, source = excluded.source, format = excluded.format, imported_at = excluded.imported_at`);
    this.deleteStmt = db.prepare('DELETE FROM inventory WHERE id = 1');
  }

  get(): StoredInventory | null {
    const row = this.getStmt.get() as Row | undefined;
    if (!row) return null;
    return {
      doc: JSON.parse(row.doc) as InventoryDoc,
      source: row.source,
      format: row.format as InventoryFormat,
      importedAt: row.imported_at,
    };
  }

  put(inv: StoredInventory): void {
    this.putStmt.run({
      doc: JSON.stringify(inv.doc),
      source: inv.source,
      format: inv.format,
      importedAt: inv.importedAt,
    });
  }

  clear(): void {
    this.deleteStmt.run();
  }
}

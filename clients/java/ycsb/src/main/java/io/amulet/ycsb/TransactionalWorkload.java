package io.amulet.ycsb;

import site.ycsb.DB;
import site.ycsb.workloads.CoreWorkload;

/**
 * YCSB's CoreWorkload, except that a read-modify-write (workload F) tells
 * the binding that its read and its update belong together, so that with
 * {@code amulet.transactional=true} {@link AmuletYcsbClient} runs both in
 * one transaction (YCSB+T). CoreWorkload calls {@code db.read} and then
 * {@code db.update} through YCSB's measuring wrapper, and a DB binding
 * cannot tell an F read from a plain one; marking the pair on the thread
 * keeps CoreWorkload's key, field and value choices and its measurements
 * (READ, UPDATE, READ-MODIFY-WRITE) as they are. Without
 * {@code amulet.transactional} the binding ignores the mark, and this is
 * CoreWorkload.
 */
public class TransactionalWorkload extends CoreWorkload {
  @Override
  public void doTransactionReadModifyWrite(DB db) {
    AmuletYcsbClient.readModifyWrite(() -> super.doTransactionReadModifyWrite(db));
  }
}

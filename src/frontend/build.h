/*
 * Shared by the builder files (build_exp.c: scalar expressions, build_acc.c:
 * array computations).  The builder makes the source graph (docs/ARCHITECTURE.md, "The pipeline"):
 * nodes in the context's arena, never copied, so sharing is pointer identity.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BUILD_H
#define AX_BUILD_H
#include "ir.h"

enum { TAG_INVALID = 0, TAG_NODE, TAG_SCALAR, TAG_TUPLE, TAG_INDEX, TAG_ERR };
/* Context-free error payloads (ax_exp.aux) for failures among constants. */
enum { CFE_NONE = 0, CFE_PRIM, CFE_NESTED, CFE_RANK, CFE_DIVZERO, CFE_TUPLE_N, CFE_PROJ };

ax_exp exp_node(Node *x);
ax_exp exp_invalid(void);
bool   exp_is_const(ax_exp e);
/* The context of the first operand that has one, or NULL. */
ax_ctx *exps_ctx(int n, const ax_exp *es);
/* Records the message of a context-free error payload on cx (if any). */
void   exp_report(ax_ctx *cx, ax_exp e, const char *op);
/* The type of e (for constant tuples, written into *tmp / elts[8]). */
const Type *exp_type(ax_exp e, Type *tmp, const Type **elts);
/* Makes e a node of cx (constants become CONST/TUPLE/IXCONS nodes).
 * NULL if e is invalid (reporting a pending payload) or from another context. */
Node  *adopt(ax_ctx *cx, ax_exp e, const char *op);
/* Converts an integer expression to i64 (for indices and extents). */
ax_exp exp_to_i64(ax_exp e, const char *op);

/* Scalar functions: makes a LAM node by calling the user's callback with
 * nparam fresh variables of the given types.  `call` adapts the callback's
 * arity.  `want` (may be NULL) is the body type required; `what` names the
 * operation for messages. */
typedef ax_exp (*Invoke)(void *fn, const ax_exp *args, void *env);
Node *build_lam(ax_ctx *cx, const char *what, int nparam, const Type *const *ptypes,
                Invoke call, void *fn, void *env, const Type *want);
ax_exp invoke1(void *fn, const ax_exp *a, void *env);
ax_exp invoke2(void *fn, const ax_exp *a, void *env);
ax_exp invoke3(void *fn, const ax_exp *a, void *env);
ax_exp invokev(void *fn, const ax_exp *a, void *env);

/* A fold, fold1, segmented fold or scan node (op) of a with f, checking
 * every operand and naming `what` in messages (build_acc.c); the
 * segmented scans (build_seg.c) check theirs with it. */
ax_acc build_reduce(Op op, const char *what, ax_fn2 f, void *env, const ax_exp *z, ax_acc a, ax_acc segs);

/* A readable type for messages (a rotating set of buffers in the context). */
const char *tstr(ax_ctx *cx, const Type *t);
#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * Up to 6.12, symbol namespaces are identifiers that MODULE_IMPORT_NS()
 * and EXPORT_SYMBOL_NS*() stringify; 6.13 takes string
 * literals instead, and an identifier no longer compiles.
 */
#include <linux/module.h>

MODULE_IMPORT_NS(DMAPLANE_PROBE);

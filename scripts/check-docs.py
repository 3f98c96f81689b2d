#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check the documentation without Sphinx.

- every Documentation/**/*.rst parses with docutils without a warning;
  the Sphinx-only constructs the kernel's documentation uses (the
  toctree and kernel-doc directives, the doc and ref roles) are accepted
  as they stand, and the targets of toctree entries and :doc: links must
  exist;
- every man page under libuser/man and tools renders with groff -man
  -ww without a warning, and every .so link names a page that exists;
- every relative link in README.md names a file that exists, every
  in-page link a heading;
- with KERNELDOC=path/to/linux/scripts/kernel-doc: every file a
  kernel-doc directive names passes kernel-doc without a warning, every
  DOC: section a directive names exists, and kernel-doc's reST output
  parses (the C domain of Sphinx accepted as it stands).

Usage: [KERNELDOC=...] scripts/check-docs.py   (from the top of the tree;
exit status 1 on any problem, which is printed)
"""
import glob
import io
import os
import re
import subprocess
import sys

from docutils import nodes, utils
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles

problems = []
doc_refs = []        # (file, target) of :doc: links and toctree entries
kernel_docs = []  # (file, source, options) of kernel-doc directives


class Stub(Directive):
    """A Sphinx directive: keep its arguments, check toctree entries."""
    has_content = True
    optional_arguments = 10
    final_argument_whitespace = True
    option_spec = None

    def run(self):
        if self.name == 'toctree':
            for line in self.content:
                line = line.strip()
                if line and not line.startswith(':'):
                    doc_refs.append((self.state.document.current_source,
                             line))
        elif self.name == 'kernel-doc':
            kernel_docs.append((self.state.document.current_source,
                                self.arguments[0], dict(self.options)))
        return []


class AnyOptions(dict):
    def __getitem__(self, key):
        return directives.unchanged


Stub.option_spec = AnyOptions(maxdepth=directives.unchanged)  # non-empty: options parsed


def stub_role(name, rawtext, text, lineno, inliner, options=None,
          content=None):
    if name == 'doc':
        target = re.sub(r'.*<(.*)>$', r'\1', text)
        doc_refs.append((inliner.document.current_source, target))
    return [nodes.literal(rawtext, utils.unescape(text))], []


class CStub(Stub):
    """A directive of Sphinx's C domain: parse its content."""
    def run(self):
        node = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


for d in ('toctree', 'kernel-doc'):
    directives.register_directive(d, Stub)
for d in ('function', 'type', 'macro', 'struct', 'enum', 'union', 'member',
          'var', 'enumerator', 'namespace-push', 'namespace-pop'):
    directives.register_directive('c:' + d, CStub)
for r in ('doc', 'ref', 'c:type', 'c:func', 'c:macro', 'c:data',
          'c:member', 'c:expr', 'c:enum', 'c:struct'):
    roles.register_local_role(r, stub_role)


def parse(text, path):
    err = io.StringIO()
    publish_doctree(text, source_path=path,
                    settings_overrides={'warning_stream': err,
                                        'report_level': 2,
                                        'halt_level': 5})
    if err.getvalue():
        problems.append(err.getvalue().rstrip())


for path in sorted(glob.glob('Documentation/**/*.rst', recursive=True)):
    parse(open(path).read(), path)

kerneldoc = os.environ.get('KERNELDOC')
for src, source, opts in kernel_docs:
    if not os.path.exists(source):
        problems.append('%s: kernel-doc of missing %s' % (src, source))
        continue
    if not kerneldoc:
        continue
    args = ['perl', kerneldoc, '-rst']
    if 'doc' in opts:
        args += ['-function', opts['doc']]
    elif 'identifiers' in opts:
        ids = (opts['identifiers'] or '').split()
        args += [a for i in ids for a in ('-function', i)] or \
            ['-no-doc-sections']
    r = subprocess.run(args + [source], capture_output=True, text=True)
    err = '\n'.join(l for l in r.stderr.splitlines()
                    if 'Sphinx version' not in l)
    if r.returncode or err:
        problems.append('%s: kernel-doc %s: %s' % (src, source, err))
    if 'doc' in opts and not r.stdout.strip():
        problems.append('%s: no DOC: %s in %s' % (src, opts['doc'], source))
    parse(r.stdout, '%s (kernel-doc %s)' % (src, source))

for src, target in doc_refs:
    base = os.path.dirname(src)
    if target.startswith('/'):
        full = os.path.join('Documentation', target.lstrip('/'))
    else:
        full = os.path.join(base, target)
    if not os.path.exists(full + '.rst'):
        problems.append('%s: no document %s' % (src, target))

pages = sorted(glob.glob('libuser/man/*.[0-9]') + glob.glob('tools/*.[0-9]'))
for page in pages:
    text = open(page).read()
    m = re.match(r'\.so (\S+)', text)
    if m:
        linked = os.path.join(os.path.dirname(page),
                      os.path.basename(m.group(1)))
        if not os.path.exists(linked):
            problems.append('%s: .so names missing %s' % (page, linked))
        continue
    r = subprocess.run(['groff', '-man', '-ww', '-z', page],
               capture_output=True, text=True)
    if r.returncode or r.stderr:
        problems.append('%s: groff: %s' % (page, r.stderr.strip()))

readme = open('README.md').read()
for target in re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', readme):
    if '://' not in target and not os.path.exists(target):
        problems.append('README.md: link to missing %s' % target)
# In-page links name a heading (GitHub's anchors: lower case, spaces to
# dashes, punctuation dropped).
anchors = {re.sub(r'[^a-z0-9 _-]', '', h.strip().lower()).replace(' ', '-')
           for h in re.findall(r'^#+ (.*)$', readme, re.M)}
for anchor in re.findall(r'\]\(#([^)]+)\)', readme):
    if anchor not in anchors:
        problems.append('README.md: link to missing heading #%s' % anchor)

for p in problems:
    print(p)
sys.exit(1 if problems else 0)

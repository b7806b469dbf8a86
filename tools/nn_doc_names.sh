#!/usr/bin/env bash
# nn_doc_names.sh DIR: the classes documented in an nn checkout's doc/*.md, one per line as
# "<doc name> <class>" (e.g. "simple Linear"), sorted. A class is an anchor nn.X (X one
# capitalized name, so no nn.Module.forward method anchors) whatever its spelling: <a name="nn.X">,
# <a name='nn.X'>, <a name = 'nn.X'>, <a name=nn.X>, or id= for name=; and X has its own file
# DIR/X.lua, which leaves out the section anchors (nn.Containers, nn.TableLayers, ...).
# spec/nn/api_spec.lua's DOC lists are this output; its spec runs the extraction on a fixture.
set -euo pipefail
export LC_ALL=C
dir=${1:?usage: tools/nn_doc_names.sh NN_CHECKOUT}
[ -d "$dir/doc" ] || { echo "nn_doc_names.sh: $dir/doc is not a directory" >&2; exit 2; }
for md in "$dir"/doc/*.md; do
   doc=$(basename "$md" .md)
   grep -oE "<[aA][[:space:]]+(name|id|NAME|ID)[[:space:]]*=[[:space:]]*[\"']?nn\.[A-Z][A-Za-z0-9_]*[\"']?[[:space:]]*/?>" "$md" \
      | sed -E 's/.*nn\.([A-Za-z0-9_]+).*/\1/' \
      | while read -r name; do
         [ -f "$dir/$name.lua" ] && echo "$doc $name"
      done || true
done | sort -u

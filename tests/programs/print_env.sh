#!/bin/sh
# Shows which variables reached the child.
echo "token=${FOO_TOKEN:-unset} api=${OPENAI_API_KEY:-unset} path=${PATH:+set} extra=${EXTRA:-unset}"

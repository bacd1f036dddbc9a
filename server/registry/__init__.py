"""Resources as data: what is served (groups, versions, kinds, scope, subresources), each kind's strategy and Table
columns, and discovery."""

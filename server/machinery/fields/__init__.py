"""Field ownership for server-side apply: managedFields, as structured-merge-diff keeps it.

A field set (fieldset.py) names fields by paths of elements (path.py); a kind's shape (shapes.py)
says how objects nest and how lists merge; typed.py turns objects into field sets, compares and
merges them; managers.py reads and writes metadata.managedFields; updater.py decides ownership and
conflicts for an Update or an Apply.
"""
